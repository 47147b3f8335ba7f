package graph

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Blob encoding. Every blob starts with one byte: 0 = raw, 1 = deflate. Blobs
// of at least compressMin bytes are deflated when that saves at least 1/8.
const (
	blobRaw     = 0
	blobDeflate = 1
	compressMin = 512
	maxInflate  = 1 << 30
)

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

func packBlob(raw []byte) []byte {
	if len(raw) >= compressMin {
		var buf bytes.Buffer
		buf.WriteByte(blobDeflate)
		w := flateWriters.Get().(*flate.Writer)
		w.Reset(&buf)
		_, err := w.Write(raw)
		if err == nil {
			err = w.Close()
		}
		flateWriters.Put(w)
		if err == nil && buf.Len() < len(raw)-len(raw)/8 {
			return buf.Bytes()
		}
	}
	out := make([]byte, 0, len(raw)+1)
	out = append(out, blobRaw)
	return append(out, raw...)
}

// UnpackBlob returns the bytes a blob of a Saver holds (a checkpoint's
// delta or snapshot, a write's value), for tools that read a store directly.
func UnpackBlob(b []byte) ([]byte, error) { return unpackBlob(b) }

func unpackBlob(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, nil
	}
	switch b[0] {
	case blobRaw:
		return b[1:], nil
	case blobDeflate:
		r := flate.NewReader(bytes.NewReader(b[1:]))
		defer r.Close()
		out, err := io.ReadAll(io.LimitReader(r, maxInflate+1))
		if err != nil {
			return nil, fmt.Errorf("graph: inflate blob: %w", err)
		}
		if len(out) > maxInflate {
			return nil, errors.New("graph: blob inflates past 1 GiB")
		}
		return out, nil
	default:
		return nil, fmt.Errorf("graph: unknown blob encoding %d", b[0])
	}
}

// rawWrite is a write whose value is JSON.
type rawWrite struct {
	Task    int
	Idx     int
	Channel string
	Value   []byte
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func encodeWrites(ws []rawWrite) []byte {
	if len(ws) == 0 {
		return nil
	}
	n := 8
	for _, w := range ws {
		n += 12 + len(w.Channel) + len(w.Value)
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(ws)))
	for _, w := range ws {
		b = binary.AppendVarint(b, int64(w.Task))
		b = binary.AppendVarint(b, int64(w.Idx))
		b = appendString(b, w.Channel)
		b = binary.AppendUvarint(b, uint64(len(w.Value)))
		b = append(b, w.Value...)
	}
	return packBlob(b)
}

var errCorrupt = errors.New("graph: corrupt blob")

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 { return readNumber(r, binary.Uvarint) }

func (r *reader) varint() int64 { return readNumber(r, binary.Varint) }

// readNumber reads one varint from r with decode.
func readNumber[T uint64 | int64](r *reader, decode func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := decode(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errCorrupt
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// openList unpacks a blob of a count and that many items and reads the
// count; an empty blob gives a nil reader. what names the blob in errors.
func openList(blob []byte, what string) (*reader, uint64, error) {
	b, err := unpackBlob(blob)
	if err != nil || len(b) == 0 {
		return nil, 0, err
	}
	r := &reader{b: b}
	n := r.uvarint()
	if n > uint64(len(b)) {
		return nil, 0, fmt.Errorf("graph: corrupt %s blob", what)
	}
	return r, n, nil
}

func decodeWrites(blob []byte) ([]rawWrite, error) {
	r, n, err := openList(blob, "writes")
	if err != nil || r == nil {
		return nil, err
	}
	ws := make([]rawWrite, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		w := rawWrite{Task: int(r.varint()), Idx: int(r.varint())}
		w.Channel = string(r.bytes())
		w.Value = r.bytes()
		ws = append(ws, w)
	}
	return ws, r.err
}

// taskSpec is a task to run from a checkpoint: a node and, for Send, its
// argument as JSON.
type taskSpec struct {
	Node string
	Arg  []byte // nil: the node reads the state
}

func encodeNext(ts []taskSpec) []byte {
	if len(ts) == 0 {
		return nil
	}
	b := binary.AppendUvarint(nil, uint64(len(ts)))
	for _, t := range ts {
		b = appendString(b, t.Node)
		if t.Arg == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(t.Arg)))
		b = append(b, t.Arg...)
	}
	return packBlob(b)
}

func decodeNext(blob []byte) ([]taskSpec, error) {
	r, n, err := openList(blob, "next")
	if err != nil || r == nil {
		return nil, err
	}
	ts := make([]taskSpec, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		t := taskSpec{Node: string(r.bytes())}
		if len(r.b) == 0 {
			r.err = errors.New("graph: corrupt next blob")
			break
		}
		hasArg := r.b[0]
		r.b = r.b[1:]
		if hasArg == 1 {
			t.Arg = r.bytes()
		}
		ts = append(ts, t)
	}
	return ts, r.err
}

func encodeSnapshot[S any](s *S) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("graph: state is not serialisable: %w", err)
	}
	return packBlob(raw), nil
}

func decodeSnapshot[S any](blob []byte, s *S) error {
	raw, err := unpackBlob(blob)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, s); err != nil {
		return fmt.Errorf("graph: decode snapshot: %w", err)
	}
	return nil
}
