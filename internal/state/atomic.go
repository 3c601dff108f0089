package state

import (
	"os"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// atomicWriter is the Store's whole-file writer (internal/atomicfile).
// Tests set hook to inject a failure or a crash before any step.
type atomicWriter struct {
	hook func(step atomicfile.Step, path string) error
	// redact, when set, is applied to the data of every write.
	redact func([]byte) []byte
}

func (w atomicWriter) write(path string, data []byte, perm os.FileMode) error {
	if w.redact != nil {
		data = w.redact(data)
	}
	return atomicfile.Writer{Hook: w.hook}.Write(path, data, perm)
}
