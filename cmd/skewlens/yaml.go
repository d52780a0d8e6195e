package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/alecthomas/kong"
	"gopkg.in/yaml.v3"
)

// yamlConfig loads a YAML configuration file for kong's --config flag. Keys
// are flag names with dashes or underscores (clickhouse_addr: ...); values
// given on the command line or in SKEWLENS_* variables win over the file.
// It converts the YAML to JSON and lets kong's JSON resolver do the
// matching, so both formats behave the same.
func yamlConfig(r io.Reader) (kong.Resolver, error) {
	var v map[string]any
	if err := yaml.NewDecoder(r).Decode(&v); err != nil && err != io.EOF {
		return nil, fmt.Errorf("config file: %w", err)
	}
	if v == nil {
		v = map[string]any{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	return kong.JSON(bytes.NewReader(b))
}
