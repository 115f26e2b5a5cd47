package audit

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// An export file is a task's events exactly as stored, each preceded by
// its length as an unsigned varint: the standard length-delimited protobuf
// stream (protodelim), readable with any protobuf library.

// maxEventSize bounds one event in an export file, so a corrupted length
// cannot make a reader allocate without limit.
const maxEventSize = 16 << 20

// WriteEvent appends one stored event to an export stream.
func WriteEvent(w io.Writer, data []byte) error {
	var n [binary.MaxVarintLen64]byte
	if _, err := w.Write(n[:binary.PutUvarint(n[:], uint64(len(data)))]); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}

// ReadEvents reads every event of an export stream. An error names the
// event at which the stream stopped making sense.
func ReadEvents(r io.Reader) ([][]byte, error) {
	br := bufio.NewReader(r)
	var out [][]byte
	for {
		n, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("event %d: bad length prefix: %w", len(out), err)
		}
		if n > maxEventSize {
			return out, fmt.Errorf("event %d: length %d exceeds %d", len(out), n, maxEventSize)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(br, data); err != nil {
			return out, fmt.Errorf("event %d: truncated: %w", len(out), err)
		}
		out = append(out, data)
	}
}
