package logjsonl

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// AppendMeta appends one loop_meta record (see [MetaLine]) to the existing
// log at path. It is meant for processes other than the one holding the
// Writer, such as ralphd's bd guard writing bd_call events into the run's
// log.
//
// The file is opened with O_APPEND and the whole line is handed to the
// kernel in a single write. On Linux a write to a regular file opened with
// O_APPEND moves to the end of the file and writes in one step under the
// file's lock, so the record lands whole after every record written before
// it and never inside another process's record, whatever its length (the
// PIPE_BUF limit of 4 KiB is about pipes, not regular files). The
// guarantee does not hold on network file systems such as NFS, and a write
// cut short by a full disk can leave a partial line. The Writer opens its
// file with O_APPEND for the same reason: without it, its own writes would
// overwrite appended records.
//
// AppendMeta does not create the file: with no run log there is nothing to
// append to, and the error wraps fs.ErrNotExist.
func AppendMeta(path string, event string, data any, now time.Time) error {
	line, err := MetaLine(event, now, data)
	if err != nil {
		return err
	}
	f, err := openAppend(path)
	if err != nil {
		return fmt.Errorf("open run log: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		_ = f.Close()
		return fmt.Errorf("append to run log: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close run log: %w", err)
	}
	return nil
}

// openAppend opens the existing log at path for appending: never through
// a symlink, and non-blocking, so that a FIFO in the log's place fails the
// open (no reader) instead of holding the caller (the guard's bd call, or
// the Writer after a restore).
func openAppend(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
}
