package skew

import "unicode/utf8"

// Flink's PrometheusReporter, with its default filterLabelValueCharacters,
// replaces every code point outside [A-Za-z0-9:_] in a label value with
// '_' (a Java regex over the string, so one non-ASCII character becomes
// one '_'): "KeyedProcess -> enrich" is reported as
// "KeyedProcess____enrich". Key samples and the other reporters carry the
// name as the Flink API gives it. The engine therefore compares task and
// job names in their filtered form, and shows people the unfiltered one.

// promKept marks the ASCII bytes the filter keeps.
var promKept = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_'
	}
	return t
}()

// isFiltered reports whether the filter leaves s unchanged. A name that
// differs from its own filtered form cannot have come through the filter,
// so it is the unfiltered (human) spelling.
func isFiltered(s string) bool {
	for i := 0; i < len(s); i++ {
		if !promKept[s[i]] {
			return false
		}
	}
	return true
}

// appendFiltered appends the filtered form of s to dst. Invalid UTF-8
// counts one '_' per byte, as the decoding of a Java string would make
// one replacement character of it.
func appendFiltered(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if promKept[c] {
			dst = append(dst, c)
			i++
			continue
		}
		dst = append(dst, '_')
		if c < utf8.RuneSelf {
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	return dst
}

// sameFiltered reports whether a and b have the same filtered form,
// without building either.
func sameFiltered(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, na := filteredAt(a, i)
		cb, nb := filteredAt(b, j)
		if ca != cb {
			return false
		}
		i += na
		j += nb
	}
	return i == len(a) && j == len(b)
}

// filteredAt returns the filtered byte for the code point at s[i] and the
// code point's length.
func filteredAt(s string, i int) (byte, int) {
	c := s[i]
	if promKept[c] {
		return c, 1
	}
	if c < utf8.RuneSelf {
		return '_', 1
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return '_', n
}

// humaner reports whether name is a better spelling to show than cur for
// the same filtered name: it is when cur is the filtered form and name is
// not. Between two unfiltered spellings the current one stays, so that
// the shown name does not flip with the order of events.
func humaner(name, cur string) bool {
	return isFiltered(cur) && !isFiltered(name)
}
