package serve

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// tokenFileFormat says what a token file holds, for errors about one.
func tokenFileFormat() string {
	return fmt.Sprintf("want a YAML map of name: token, one per line "+
		"(e.g. `oncall: <a secret of at least %d bytes>`; the name is audited as who made a change; "+
		"deploy/config/tokens.yaml is an example)", MinTokenBytes)
}

// ParseTokens reads a token file: a YAML map of name: token. An empty
// file (or one of comments only) gives no tokens and no error: the API
// is read-only then, which the caller warns about. Anything else than a
// map, e.g. a file holding only a token, is an error that says what the
// file should hold.
func ParseTokens(b []byte) (map[string]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not YAML (%w): %s", err, tokenFileFormat())
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return map[string]string{}, nil
	}
	n := doc.Content[0]
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return map[string]string{}, nil
	case n.Kind == yaml.ScalarNode:
		// Never echo the value: it may be a token.
		return nil, fmt.Errorf("holds a single value (a bare token?), not a map: %s", tokenFileFormat())
	case n.Kind == yaml.SequenceNode:
		return nil, fmt.Errorf("holds a list, not a map: %s", tokenFileFormat())
	case n.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("not a map: %s", tokenFileFormat())
	}
	tokens := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			return nil, fmt.Errorf("line %d: the value of a name must be one token: %s", k.Line, tokenFileFormat())
		}
		if _, dup := tokens[k.Value]; dup {
			return nil, fmt.Errorf("line %d: name %q given twice", k.Line, k.Value)
		}
		tokens[k.Value] = v.Value
	}
	return tokens, nil
}
