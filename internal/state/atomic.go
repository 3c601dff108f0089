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

// write replaces the file name below d with data, atomically, never
// through a link (atomicfile.Writer.WriteIn).
func (w atomicWriter) write(d *atomicfile.Dir, name string, data []byte, perm os.FileMode) error {
	if w.redact != nil {
		data = w.redact(data)
	}
	return atomicfile.Writer{Hook: w.hook}.WriteIn(d, name, data, perm)
}
