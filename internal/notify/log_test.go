package notify

import (
	"io"
	"sync"

	"github.com/charmbracelet/log"
)

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newLogger(mu *sync.Mutex, w io.Writer) *log.Logger { return log.New(lockedWriter{mu, w}) }
