// Test-only helpers: production code never calls these.

package logjsonl

import (
	"fmt"
	"os"
	"time"
)

// MarshalJSON encodes f as a JSON object with the keys in slice order.
func (f Fields) MarshalJSON() ([]byte, error) {
	return f.appendJSON(nil)
}

// CreateWith creates dir (0700) if needed and a new file in it named after
// now in local time, <YYYY-MM-DDTHH-MM-SS>.log, or <...>-1.log, -2, ... if
// that name is taken. The file is created with mode 0600 and opened with
// O_APPEND. Then it applies retention with [Prune]: it keeps the newest
// retention .log files in dir, the new one included, and deletes the rest
// (0 means DefaultRetention, a negative value keeps every file). A failed
// deletion does not fail CreateWith; [Writer.Retention] reports it.
func CreateWith(dir string, now time.Time, retention int, opts Options) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	return create(dir, now.Local().Format(FileTimeLayout), retention, opts)
}

// Create opens a new run log in dir and applies retention, with default
// Options. See [CreateWith].
func Create(dir string, now time.Time, retention int) (*Writer, error) {
	return CreateWith(dir, now, retention, Options{})
}
