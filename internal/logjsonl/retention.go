package logjsonl

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// logFile is one .log file in a log directory, with what orders it.
type logFile struct {
	name   string
	t      time.Time // from the name, or the modification time
	suffix int       // the N of a legacy -N suffix
	mod    time.Time // the modification time
	named  bool      // the name is a run ID or a legacy log name
}

// parseLogName parses a log file's name: a run ID (see package runid), or
// the legacy <FileTimeLayout>[-N] in local time, with the .log extension.
func parseLogName(name string) (t time.Time, suffix int, ok bool) {
	base, found := strings.CutSuffix(name, ".log")
	if !found {
		return time.Time{}, 0, false
	}
	if t, ok = ParseRunID(base); !ok {
		return time.Time{}, 0, false
	}
	if len(base) > len(FileTimeLayout) && base[len(FileTimeLayout)] == '-' && strings.Count(base[:len(FileTimeLayout)], "-") == 4 {
		suffix, _ = strconv.Atoi(base[len(FileTimeLayout)+1:])
	}
	return t, suffix, true
}

// listLogFiles returns the regular .log files of dir, oldest first: by the
// time in their name (then a legacy -N suffix, then the modification time,
// which orders runs started in the same second), or by modification time
// for files named otherwise. The directory is listed through an
// atomicfile.Dir: when it is a link, that is an error, never followed.
// Entries named *.log that are neither regular files nor directories are
// in odd.
func listLogFiles(dir string) (files []logFile, odd []string, err error) {
	d, err := atomicfile.OpenDir(dir)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(".")
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		if e.IsDir() {
			continue // a directory of the user's, say "archive.log"
		}
		if !e.Type().IsRegular() {
			odd = append(odd, e.Name())
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		lf := logFile{name: e.Name(), mod: info.ModTime()}
		lf.t, lf.suffix, lf.named = parseLogName(lf.name)
		if !lf.named {
			lf.t = lf.mod
		}
		files = append(files, lf)
	}
	slices.SortFunc(files, func(a, b logFile) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		if c := cmp.Compare(a.suffix, b.suffix); c != 0 {
			return c
		}
		if c := a.mod.Compare(b.mod); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return files, odd, nil
}

// Prune keeps the newest keep regular files named *.log in dir and deletes
// the older ones. The file named except (a base name, usually the log just
// created) is never deleted and counts as the newest. Files are ordered by
// the time in their name (<YYYY-MM-DDTHH-MM-SS>[-N].log) or, for other
// names, by modification time. Other files and directories are left alone.
// Prune returns the paths it deleted; it tries every file and joins the
// errors. keep < 1 is treated as 1 when except is set, else as 0.
//
// Prune lists and deletes through an atomicfile.Dir: it never follows a
// link (dir itself being one is an error), and it deletes only files
// ralphd made. A link, FIFO or hard link named like a log is left alone,
// and named in the returned error.
func Prune(dir string, keep int, except string) (removed []string, err error) {
	files, odd, err := listLogFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("list logs for retention: %w", err)
	}
	d, err := atomicfile.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list logs for retention: %w", err)
	}
	defer d.Close()
	var errs []error
	for _, name := range odd {
		if err := d.Check(name); atomicfile.IsForeign(err) {
			errs = append(errs, fmt.Errorf("log retention: %w; left alone, as ralphd did not make it", err))
		}
	}
	files = slices.DeleteFunc(files, func(f logFile) bool { return f.name == except })
	if except != "" {
		keep-- // the excepted file is one of the kept
	}
	keep = max(keep, 0)
	if len(files) <= keep {
		return nil, errors.Join(errs...)
	}
	for _, f := range files[:len(files)-keep] {
		path := filepath.Join(dir, f.name)
		if err := d.Remove(f.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove old log: %w", err))
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}
