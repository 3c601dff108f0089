package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Frame types. The client sends one frameHello, then stdin as frameStdin
// frames and one frameStdinEOF; the server sends frameStdout and
// frameStderr frames and one frameExit.
const (
	frameHello    byte = 'h'
	frameStdin    byte = 'i'
	frameStdinEOF byte = 'I'
	frameStdout   byte = 'o'
	frameStderr   byte = 'e'
	frameExit     byte = 'x'
)

// Size limits: a hello carries argv and a path; data frames carry what
// one read returned.
const (
	maxHello = 1 << 20
	maxData  = 64 << 10
)

var errFrameTooLarge = errors.New("frame too large")

// writeFrame writes one frame: its type, its length (4 bytes, big
// endian), and its payload.
func writeFrame(w io.Writer, typ byte, payload []byte) error {
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(append(hdr[:], payload...)); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// readFrame reads one frame of at most limit payload bytes.
func readFrame(r io.Reader, limit int) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if int64(n) > int64(limit) {
		return 0, nil, fmt.Errorf("%w: %d bytes (limit %d)", errFrameTooLarge, n, limit)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, fmt.Errorf("read frame: %w", err)
	}
	return hdr[0], buf, nil
}

// frameWriter is an io.Writer that sends each write as frames of one
// type; writes of several frameWriters on one connection are serialised
// by mu.
type frameWriter struct {
	mu  *sync.Mutex
	w   io.Writer
	typ byte
}

func (f frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	written := 0
	for len(p) > 0 {
		n := min(len(p), maxData)
		if err := writeFrame(f.w, f.typ, p[:n]); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// exitPayload encodes an exit code.
func exitPayload(code int) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(int32(code)))
}

// parseExit decodes an exit code.
func parseExit(p []byte) (int, error) {
	if len(p) != 4 {
		return 0, fmt.Errorf("exit frame of %d bytes", len(p))
	}
	return int(int32(binary.BigEndian.Uint32(p))), nil
}
