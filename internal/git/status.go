package git

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Status is the work tree as an iteration's progress signals see it,
// .beads/ left out.
type Status struct {
	Head string // HEAD's commit; "" in a repository without commits
	// Changed lists the paths with uncommitted changes, untracked files
	// included, as Changed does.
	Changed []string
	// Diff is a hash of the uncommitted work: the diff against HEAD and
	// the content of untracked files. Equal hashes mean no change in
	// between.
	Diff string
}

// Status reads HEAD, the changed paths and the hash of the uncommitted
// work. Dir must be the top of the work tree. It takes one git status and
// one lookup of the repository's drivers (see Runner), and a git diff only
// when a tracked file changed; untracked files are hashed here, with no
// git call each.
func (r Repo) Status(ctx context.Context) (Status, error) {
	r = r.inStep() // status and, when needed, diff
	out, err := r.git(ctx, append([]string{"status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all"}, excludeBeads...)...)
	if err != nil {
		return Status{}, err
	}
	st := parseStatusV2(out)
	h := sha256.New()
	if st.tracked {
		args := []string{"diff", "--binary", "HEAD"}
		if st.head == "" {
			args = []string{"diff", "--binary", "--cached"}
		}
		diff, err := r.git(ctx, append(args, excludeBeads...)...)
		if err != nil {
			return Status{}, err
		}
		h.Write(diff)
	}
	for _, p := range st.untracked {
		id, err := blobID(filepath.Join(r.Dir, filepath.FromSlash(p)))
		if err != nil {
			id = "-" // gone since listed, or not a file to read
		}
		fmt.Fprintf(h, "%s %s\n", p, id)
	}
	return Status{Head: st.head, Changed: st.changed, Diff: hex.EncodeToString(h.Sum(nil))[:16]}, nil
}

// statusV2 is what `git status --porcelain=v2 -z --branch` said.
type statusV2 struct {
	head      string   // "" for "(initial)"
	changed   []string // every path listed, in order (a rename: its new path)
	tracked   bool     // a tracked path changed (in the index or the work tree)
	untracked []string // the untracked paths, in order
}

// parseStatusV2 reads `git status --porcelain=v2 -z --branch` output:
// NUL-terminated records, headers "# branch.oid <commit>|(initial)",
// changed entries "1 <8 fields> <path>", renames and copies
// "2 <9 fields> <path>" followed by a record holding the source path,
// unmerged entries "u <10 fields> <path>", and untracked ones "? <path>".
// A path may hold spaces, so it is everything after the fixed fields.
func parseStatusV2(out []byte) statusV2 {
	var st statusV2
	recs := bytes.Split(out, []byte{0})
	for i := 0; i < len(recs); i++ {
		rec := string(recs[i])
		if len(rec) < 2 || rec[1] != ' ' {
			continue
		}
		switch rec[0] {
		case '#':
			if oid, ok := strings.CutPrefix(rec, "# branch.oid "); ok && IsHash(oid) {
				st.head = oid
			}
		case '1', '2', 'u':
			fields := map[byte]int{'1': 9, '2': 10, 'u': 11}[rec[0]]
			if rec[0] == '2' {
				i++ // its second record is the source path
			}
			f := strings.SplitN(rec, " ", fields)
			if len(f) < fields || f[fields-1] == "" {
				continue
			}
			st.changed = append(st.changed, f[fields-1])
			st.tracked = true
		case '?':
			if p := rec[2:]; p != "" {
				st.changed = append(st.changed, p)
				st.untracked = append(st.untracked, p)
			}
		}
	}
	return st
}

// blobID returns the id `git hash-object --no-filters` gives the file at
// path in a SHA-1 repository: of a symlink, its target. Only a regular
// file is read: a FIFO or a device in its place (a BUILD agent can leave
// one) is refused without blocking, and so is a symlink swapped in after
// the look.
func blobID(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		return blobOf(strings.NewReader(target), int64(len(target)))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	return blobOf(f, fi.Size())
}

// blobOf hashes size bytes of r as a git blob.
func blobOf(r io.Reader, size int64) (string, error) {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	if _, err := io.CopyN(h, r, size); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
