package extract

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// ErrUsage reports bad command-line arguments.
var ErrUsage = errors.New("extract: usage")

// RunCLI implements `extract [--url URL] [--json] [--markdown] FILE`: it
// reads FILE (HTML, gzip-compressed HTML, or - for stdin), extracts the main
// content and prints its text, its markdown, or all fields as JSON.
func RunCLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pageURL := fs.String("url", "", "the page's URL, to resolve relative links")
	asJSON := fs.Bool("json", false, "print all fields as JSON")
	asMD := fs.Bool("markdown", false, "print the content as markdown")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: extract [--url URL] [--json | --markdown] FILE   (FILE: .html, .html.gz or - for stdin)")
		fs.PrintDefaults()
	}
	// Accept flags before and after FILE.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 {
		fs.Usage()
		return fmt.Errorf("%w: want exactly one FILE, got %d", ErrUsage, len(files))
	}
	if *asJSON && *asMD {
		return fmt.Errorf("%w: --json and --markdown exclude each other", ErrUsage)
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	in := stdin
	if files[0] != "-" {
		f, err := os.Open(files[0])
		if err != nil {
			return fmt.Errorf("extract: %w", err)
		}
		defer f.Close()
		in = f
	}
	r, err := maybeGunzip(in)
	if err != nil {
		return err
	}
	a, err := Extract(r, *pageURL, Options{})
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(a); err != nil {
			return fmt.Errorf("extract: write: %w", err)
		}
	case *asMD:
		if _, err := fmt.Fprintln(stdout, a.Markdown); err != nil {
			return fmt.Errorf("extract: write: %w", err)
		}
	default:
		if _, err := fmt.Fprintln(stdout, a.Text); err != nil {
			return fmt.Errorf("extract: write: %w", err)
		}
	}
	if a.Text == "" {
		fmt.Fprintln(stderr, "extract: no main content found")
	}
	return nil
}

// maybeGunzip returns a reader of the decompressed input when it starts
// with the gzip magic number, else of the input as is. The decompressed
// size is bounded by Extract's own limit.
func maybeGunzip(in io.Reader) (io.Reader, error) {
	br := bufio.NewReader(in)
	head, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: %w", ErrRead, err)
	}
	if bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %w", ErrRead, err)
		}
		return zr, nil
	}
	return br, nil
}
