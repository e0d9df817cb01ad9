package ascend

import (
	"iter"
	"strings"
)

// keyValueLine is one non-blank line of a "key<sep>value" output
// (version.info, `npu-smi info -t health`).
type keyValueLine struct {
	// No is the 1-based line number; Text the line, trimmed.
	No   int
	Text string
	// Key and Value are trimmed; HasSep is false for a line without the
	// separator, whose Key is then the whole line.
	Key, Value string
	HasSep     bool
}

// keyValueLines yields the non-blank lines of data split at the first sep.
func keyValueLines(data []byte, sep string) iter.Seq[keyValueLine] {
	return func(yield func(keyValueLine) bool) {
		for i, raw := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(raw)
			if trimmed == "" {
				continue
			}
			key, value, ok := strings.Cut(trimmed, sep)
			l := keyValueLine{No: i + 1, Text: trimmed, Key: strings.TrimSpace(key), Value: strings.TrimSpace(value), HasSep: ok}
			if !yield(l) {
				return
			}
		}
	}
}
