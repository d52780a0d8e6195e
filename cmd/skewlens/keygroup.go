package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/skewlens/skewlens/skew/keygroup"
)

type keygroupCmd struct {
	Parallelism    int      `short:"p" required:"" placeholder:"SUBTASKS" help:"Parallelism of the keyed operator." range:"[1,${max_parallelism}]"`
	MaxParallelism int      `short:"m" placeholder:"KEY_GROUPS" help:"Max parallelism; default is Flink's default for the parallelism (computeDefaultMaxParallelism)." range:"[0,${max_parallelism}]"`
	Keys           []string `arg:"" optional:"" name:"key" help:"Keys (String keys, as Flink sees them). Without keys, read one key per line from standard input, exactly as written: an empty line is the empty key and spaces are kept."`
}

type keygroupLine struct {
	Key      string `json:"key"`
	JavaHash int32  `json:"java_hash"`
	KeyGroup int    `json:"key_group"`
	Subtask  int    `json:"subtask"`
}

func (c *keygroupCmd) Run(e *env) error {
	r, err := keygroup.NewRouter(c.Parallelism, c.MaxParallelism)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(e.stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	emit := func(k string) error {
		h := keygroup.StringHash(k)
		kg, st := r.Route(h)
		return enc.Encode(keygroupLine{Key: k, JavaHash: h, KeyGroup: kg, Subtask: st})
	}
	if len(c.Keys) > 0 {
		for _, k := range c.Keys {
			if err := emit(k); err != nil {
				return err
			}
		}
		return out.Flush()
	}
	in := bufio.NewReaderSize(e.stdin, 64<<10)
	for {
		line, err := in.ReadString('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
			if eerr := emit(line); eerr != nil {
				return eerr
			}
		} else if len(line) > 0 {
			// A last line without a newline is still a key.
			if eerr := emit(line); eerr != nil {
				return eerr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read keys: %w", err)
		}
	}
	return out.Flush()
}
