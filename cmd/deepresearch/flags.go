package main

import "flag"

// parseInterspersed parses flags that may come before or after positional
// arguments (`ask "question" -o report.md` as well as `ask -o report.md
// "question"`) and returns the positional ones in order. "--" ends the
// flags: everything after it is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
