package decode

import (
	"encoding/binary"
)

// JSON decoding, hand-written for the hot path: encoding/json is more than
// ten times slower (BenchmarkKeySampleJSON against
// BenchmarkKeySampleEncodingJSON). One pass validates the whole object and
// records where the value of each known field is; the values are
// interpreted only once the object is complete and its shape (key sample
// or metric) known. Top-level keys are predicted from the previous line's
// layout (predKey). See docs/architecture.md, Design notes: the JSON
// decoder.
//
// This file has the field tables, the per-line state and the entry point;
// json_scan.go the scanner, json_keysample.go and json_metric.go the
// mapping of a scanned object onto a key sample or a metric.

// MaxJSONDepth bounds the nesting of objects and arrays, counting the
// top-level object as 1. Deeper input is rejected as invalid_json.
const MaxJSONDepth = 64

// Value kinds recorded for a field.
const (
	jAbsent uint8 = iota
	jString
	jNumber
	jTrue
	jFalse
	jNull
	jObject
	jArray
)

// Fields recorded during the scan. Top-level fields, then the fields of a
// metric's "tags" object, then those of a metric's "value" object.
const (
	fTS = iota
	fJobID
	fJobName
	fTaskName
	fKey
	fWeight
	fSampleRate
	fPar
	fMaxPar
	fSubtask
	fName
	fTime
	fHost
	fTMID
	fTaskID
	fTaskAttemptID
	fValue
	fTags

	tHost
	tTMID
	tJobID
	tJobName
	tTaskID
	tTaskName
	tTaskAttemptID
	tSubtask

	vCount
	vRate
	vValue

	numJSONFields
)

const (
	tagBits   = (1<<(tSubtask+1) - 1) &^ (1<<tHost - 1)
	valueBits = (1<<(vValue+1) - 1) &^ (1<<vCount - 1)
)

// Which key table applies inside an object.
const (
	tblTop uint8 = iota
	tblTags
	tblValue
)

type jspan struct {
	s, e int // value bytes; for strings the content between the quotes
	// Numbers: the value as mant * 10^exp (negated when neg), filled in
	// while validating. numExact: mant holds every digit. numInt: no
	// fraction or exponent was written.
	mant  uint64
	exp   int32
	kind  uint8
	esc   bool // strings: contains backslash escapes
	neg   bool
	flags uint8
}

const (
	numExact uint8 = 1 << iota
	numInt
)

// maxPredicted is how many leading top-level keys are predicted.
const maxPredicted = 24

// predKey remembers the key found at one position of the previous line's
// top-level object: its bytes plus the closing quote, as two masked
// little-endian words. Lines from one producer repeat their layout, so
// comparing two words usually replaces scanning the key and looking it up.
type predKey struct {
	w0, w1 uint64
	m0, m1 uint64
	n      uint8 // key length + 1 (the quote); 0: no prediction
	id     int8
}

func (p *predKey) set(key []byte, id int) {
	n := len(key) + 1
	if n > 16 {
		p.n = 0
		return
	}
	var buf [16]byte
	copy(buf[:], key)
	buf[len(key)] = '"'
	p.w0 = binary.LittleEndian.Uint64(buf[0:])
	p.w1 = binary.LittleEndian.Uint64(buf[8:])
	p.m0, p.m1 = ^uint64(0), ^uint64(0)
	if n < 8 {
		p.m0 = 1<<(8*n) - 1
	}
	if n <= 8 {
		p.m1 = 0
	} else if n < 16 {
		p.m1 = 1<<(8*(n-8)) - 1
	}
	p.n = uint8(n)
	p.id = int8(id)
}

type jsonState struct {
	have  uint32 // bit i set: spans[i] recorded
	spans [numJSONFields]jspan
	pred  [maxPredicted]predKey
}

// get returns the span of field id if present and not null.
func (js *jsonState) get(id int) (*jspan, bool) {
	if js.have&(1<<id) == 0 {
		return nil, false
	}
	sp := &js.spans[id]
	return sp, sp.kind != jNull
}

func topField(k string) int {
	switch k {
	case "ts":
		return fTS
	case "key":
		return fKey
	case "name":
		return fName
	case "value":
		return fValue
	case "job_id", "<job_id>":
		return fJobID
	case "task_name", "<task_name>":
		return fTaskName
	case "job_name", "<job_name>":
		return fJobName
	case "subtask_index", "<subtask_index>":
		return fSubtask
	case "weight":
		return fWeight
	case "sample_rate":
		return fSampleRate
	case "parallelism":
		return fPar
	case "max_parallelism":
		return fMaxPar
	case "time_stamp", "timestamp":
		return fTime
	case "host", "<host>":
		return fHost
	case "tm_id", "<tm_id>":
		return fTMID
	case "task_id", "<task_id>":
		return fTaskID
	case "task_attempt_id", "<task_attempt_id>":
		return fTaskAttemptID
	case "tags":
		return fTags
	}
	return -1
}

var tagFieldOf = [...]int{
	varHost:          tHost,
	varTMID:          tTMID,
	varJobID:         tJobID,
	varJobName:       tJobName,
	varTaskID:        tTaskID,
	varTaskName:      tTaskName,
	varTaskAttemptID: tTaskAttemptID,
	varSubtask:       tSubtask,
}

func lookupField(tbl uint8, k string) int {
	switch tbl {
	case tblTop:
		return topField(k)
	case tblTags:
		if v := lookupVar(k); v != varNone && v != varTaskAttemptNum {
			return tagFieldOf[v]
		}
	case tblValue:
		switch k {
		case "count":
			return vCount
		case "rate":
			return vRate
		case "value":
			return vValue
		}
	}
	return -1
}

func jsonErr(msg string) *Error { return newErr(ReasonInvalidJSON, "", msg) }

const (
	errJSONEOF   = "unexpected end of input"
	errJSONDepth = "nesting deeper than 64"
)

func (d *Decoder) decodeJSON(b []byte, f Format) (Kind, *Error) {
	if b[0] != '{' {
		return KindNone, jsonErr("not a JSON object")
	}
	d.js.have = 0
	i, err := d.scanObject(b, 0, tblTop, 1)
	if err != nil {
		return KindNone, err
	}
	// trimBlank removed trailing blanks, so anything left is garbage.
	if i != len(b) {
		return KindNone, jsonErr("trailing data after object")
	}
	switch f {
	case FormatKeyJSON:
		return d.finishKeySample(b)
	case FormatMetricJSON:
		return d.finishMetricJSON(b)
	}
	if _, ok := d.js.get(fName); ok {
		return d.finishMetricJSON(b)
	}
	if _, ok := d.js.get(fKey); ok {
		return d.finishKeySample(b)
	}
	return KindNone, newErr(ReasonMissingField, "key", `object has neither "key" (key sample) nor "name" (metric)`)
}

// str returns the string value of a recorded string span, unescaping into
// scratch when needed.
func (d *Decoder) jsonStr(b []byte, sp *jspan) string {
	raw := b[sp.s:sp.e]
	if !sp.esc {
		return bytesToString(raw)
	}
	mark := len(d.scratch)
	d.scratch = appendJSONUnescaped(d.scratch, raw)
	return bytesToString(d.scratch[mark:])
}

// jsonText returns the text of a string or number span: strings unescaped,
// numbers as written. ok is false for other kinds.
func (d *Decoder) jsonText(b []byte, sp *jspan) (string, bool) {
	switch sp.kind {
	case jString:
		return d.jsonStr(b, sp), true
	case jNumber:
		return bytesToString(b[sp.s:sp.e]), true
	}
	return "", false
}

// jsonInt reads an optional integer field that must be a JSON number in
// [lo, hi].
func (d *Decoder) jsonInt(b []byte, id int, name, msg string, lo, hi int64) (int64, bool, *Error) {
	sp, ok := d.js.get(id)
	if !ok {
		return 0, false, nil
	}
	if sp.kind != jNumber {
		return 0, false, newErr(ReasonBadField, name, "must be a number")
	}
	v, ok := sp.numInt64(b)
	if !ok || v < lo || v > hi {
		return 0, false, newErr(ReasonBadField, name, msg)
	}
	return v, true, nil
}

// jsonReqStr reads a required string field.
func (d *Decoder) jsonReqStr(b []byte, id int, name string, nonEmpty bool) (string, *Error) {
	sp, ok := d.js.get(id)
	if !ok {
		return "", newErr(ReasonMissingField, name, "")
	}
	if sp.kind != jString {
		return "", newErr(ReasonBadField, name, "must be a string")
	}
	if nonEmpty && sp.e == sp.s {
		return "", newErr(ReasonBadField, name, "must not be empty")
	}
	return d.jsonStr(b, sp), nil
}
