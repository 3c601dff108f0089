package git

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// An ObjectKeeper keeps the files of a repository's object store (loose
// objects and packs) as hard links in a directory of ralphd's, so that
// an object an agent deletes can be put back. Every such file is
// immutable once written (git names it by its content), and a hard link
// survives the unlink of the other name: keeping one costs a directory
// entry, not a copy. Where the keep directory is on another file system,
// each file is copied once instead.
//
// Keep before an agent runs; Restore after it: a file that went away is
// linked back when any object in it is found nowhere else in the store
// (a gc that packed loose objects, or a repack that replaced packs, lost
// nothing, and its old files are let go), and a file replaced by another
// at its name is put back over it.
type ObjectKeeper struct {
	// Objects is the object store (the common git dir's objects/); Dir
	// is where the links live, mirroring its layout.
	Objects, Dir string
	// HashLen is the length of an object id in hex: 40 (SHA-1) or 64
	// (SHA-256).
	HashLen int
}

// Keep links every object file of the store that Dir does not hold yet.
func (k *ObjectKeeper) Keep() error {
	files, err := k.storeFiles(k.Objects)
	if err != nil {
		return fmt.Errorf("keep the object store: %w", err)
	}
	for _, rel := range files {
		dst := filepath.Join(k.Dir, rel)
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return fmt.Errorf("keep the object store: %w", err)
		}
		if err := linkOrCopy(filepath.Join(k.Objects, rel), dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("keep the object store: %w", err)
		}
	}
	return nil
}

// Restored is what Restore put back.
type Restored struct {
	// Files are the object files put back, relative to the store.
	Files []string
	// Replaced are those of them that were there, but another file.
	Replaced []string
}

// Empty reports whether nothing was put back.
func (r Restored) Empty() bool { return len(r.Files) == 0 }

// String describes what was put back, for a violation.
func (r Restored) String() string {
	if r.Empty() {
		return ""
	}
	shown := r.Files
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(r.Files)-5))
	}
	return fmt.Sprintf("%d object file(s) of the repository were deleted or replaced (%s); put back from ralphd's links", len(r.Files), strings.Join(shown, ", "))
}

// Restore puts back each kept file whose objects the store lost (see
// ObjectKeeper), and lets go of each kept file gone from the store whose
// objects are all still there.
func (k *ObjectKeeper) Restore() (Restored, error) {
	var res Restored
	kept, err := k.storeFiles(k.Dir)
	if err != nil {
		return res, fmt.Errorf("restore the object store: %w", err)
	}
	var missing []string
	for _, rel := range kept {
		orig := filepath.Join(k.Objects, rel)
		fi, err := os.Lstat(orig)
		switch {
		case err == nil && fi.Mode().IsRegular() && k.same(fi, filepath.Join(k.Dir, rel)):
		case err == nil:
			// Something else at its name (another file, a link, a
			// FIFO): never what git wrote there.
			if err := k.put(rel, true); err != nil {
				return res, err
			}
			res.Files = append(res.Files, rel)
			res.Replaced = append(res.Replaced, rel)
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			missing = append(missing, rel)
		default:
			return res, fmt.Errorf("restore the object store: %w", err)
		}
	}
	if len(missing) == 0 {
		return res, nil
	}
	have, err := k.present()
	if err != nil {
		return res, err
	}
	for _, group := range k.groups(missing) {
		ids, err := k.ids(group)
		if err != nil {
			return res, err
		}
		lost := slices.ContainsFunc(ids, func(id string) bool { return !have(id) })
		for _, rel := range group {
			if !lost {
				_ = os.Remove(filepath.Join(k.Dir, rel)) // a gc's or a repack's doing: nothing lost
				continue
			}
			if err := k.put(rel, false); err != nil {
				return res, err
			}
			res.Files = append(res.Files, rel)
		}
	}
	slices.Sort(res.Files)
	return res, nil
}

// same reports whether fi, found in the store, is the kept file at kept.
// A copy (another file system) is taken to be the same as a regular file
// of its size at its name.
func (k *ObjectKeeper) same(fi fs.FileInfo, kept string) bool {
	ki, err := os.Lstat(kept)
	if err != nil {
		return true // not kept after all: nothing to compare
	}
	if os.SameFile(fi, ki) {
		return true
	}
	return device(fi) != device(ki) && fi.Size() == ki.Size()
}

func device(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

// put links the kept file rel back into the store, over what is there
// when replace is set.
func (k *ObjectKeeper) put(rel string, replace bool) error {
	src, dst := filepath.Join(k.Dir, rel), filepath.Join(k.Objects, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("put back %s: %w", rel, err)
	}
	if replace {
		if err := os.RemoveAll(dst); err != nil {
			return fmt.Errorf("put back %s: %w", rel, err)
		}
	}
	tmp := dst + ".ralphd-tmp"
	_ = os.Remove(tmp)
	if err := linkOrCopy(src, tmp); err != nil {
		return fmt.Errorf("put back %s: %w", rel, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("put back %s: %w", rel, err)
	}
	return nil
}

// groups splits the missing files into what goes together: a loose
// object alone, a pack with its index and the files beside them.
func (k *ObjectKeeper) groups(missing []string) [][]string {
	packs := map[string][]string{}
	var out [][]string
	for _, rel := range missing {
		if base, ok := packBase(rel); ok {
			packs[base] = append(packs[base], rel)
			continue
		}
		out = append(out, []string{rel})
	}
	for _, base := range slices.Sorted(maps.Keys(packs)) {
		out = append(out, packs[base])
	}
	return out
}

// ids returns the object ids held by a group of kept files: a loose
// object's own, or every object in a pack's kept index.
func (k *ObjectKeeper) ids(group []string) ([]string, error) {
	if len(group) == 1 {
		if id, ok := k.looseID(group[0]); ok {
			return []string{id}, nil
		}
	}
	base, _ := packBase(group[0])
	idx, err := readPackIndex(filepath.Join(k.Dir, base+".idx"), k.HashLen/2)
	if errors.Is(err, fs.ErrNotExist) {
		// Its index was never kept: nothing says what it held, so it is
		// put back.
		return []string{strings.Repeat("0", k.HashLen)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restore the object store: %w", err)
	}
	return idx.all(), nil
}

// present returns a test of whether the store (its loose objects and the
// packs it has now) holds an object. Alternates are not looked at: an
// object only they hold is lost when they go.
func (k *ObjectKeeper) present() (func(string) bool, error) {
	var idxs []*packIndex
	packDir := filepath.Join(k.Objects, "pack")
	entries, err := os.ReadDir(packDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the packs: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".idx") || !e.Type().IsRegular() {
			continue
		}
		if _, err := os.Stat(filepath.Join(packDir, strings.TrimSuffix(e.Name(), ".idx")+".pack")); err != nil {
			continue // an index without its pack holds nothing
		}
		idx, err := readPackIndex(filepath.Join(packDir, e.Name()), k.HashLen/2)
		if err != nil {
			continue // unreadable: what only it holds counts as lost
		}
		idxs = append(idxs, idx)
	}
	return func(id string) bool {
		if fi, err := os.Lstat(filepath.Join(k.Objects, id[:2], id[2:])); err == nil && fi.Mode().IsRegular() {
			return true
		}
		raw, err := hex.DecodeString(id)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(idxs, func(x *packIndex) bool { return x.has(raw) })
	}, nil
}

// storeFiles lists the object files under root, laid out as an object
// store: loose objects (xx/yyyy…) and pack files (pack/pack-*.{pack,idx,
// rev,bitmap,mtimes}), relative to root. Anything else is left out.
func (k *ObjectKeeper) storeFiles(root string) ([]string, error) {
	var out []string
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir() && len(name) == 2 && isHex(name):
			files, err := os.ReadDir(filepath.Join(root, name))
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				rel := filepath.Join(name, f.Name())
				if _, ok := k.looseID(rel); ok && f.Type().IsRegular() {
					out = append(out, rel)
				}
			}
		case e.IsDir() && name == "pack":
			files, err := os.ReadDir(filepath.Join(root, name))
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				rel := filepath.Join(name, f.Name())
				if _, ok := packBase(rel); ok && f.Type().IsRegular() {
					out = append(out, rel)
				}
			}
		}
	}
	return out, nil
}

// looseID returns the object id of a loose object's path (xx/yyyy…).
func (k *ObjectKeeper) looseID(rel string) (string, bool) {
	dir, name := filepath.Split(rel)
	id := strings.TrimSuffix(dir, string(filepath.Separator)) + name
	if len(dir) != 3 || len(id) != k.HashLen || !isHex(id) {
		return "", false
	}
	return id, true
}

// packBase returns pack/pack-<id> for a pack file's path.
func packBase(rel string) (string, bool) {
	dir, name := filepath.Split(rel)
	if dir != "pack"+string(filepath.Separator) || !strings.HasPrefix(name, "pack-") {
		return "", false
	}
	ext := filepath.Ext(name)
	switch ext {
	case ".pack", ".idx", ".rev", ".bitmap", ".mtimes":
	default:
		return "", false
	}
	id := strings.TrimSuffix(strings.TrimPrefix(name, "pack-"), ext)
	if !isHex(id) {
		return "", false
	}
	return filepath.Join("pack", "pack-"+id), true
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// linkOrCopy makes dst the same file as src, or a copy of it where a
// link cannot be made (another file system).
func linkOrCopy(src, dst string) error {
	err := os.Link(src, dst)
	if err == nil || !errors.Is(err, syscall.EXDEV) && !errors.Is(err, syscall.EPERM) {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		_ = os.Remove(dst)
		return err
	}
	return out.Close()
}

// packIndex is a version 2 pack index: its sorted object ids.
type packIndex struct {
	n, size int
	ids     []byte // n ids of size bytes, sorted
}

// readPackIndex reads the object ids of the version 2 pack index at path,
// whose ids are size bytes long.
func readPackIndex(path string, size int) (*packIndex, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const head = 8 + 256*4
	if len(b) < head || !bytes.Equal(b[:4], []byte{0xff, 't', 'O', 'c'}) || binary.BigEndian.Uint32(b[4:8]) != 2 {
		return nil, fmt.Errorf("%s: not a version 2 pack index", path)
	}
	n := int(binary.BigEndian.Uint32(b[head-4 : head]))
	if size <= 0 || len(b) < head+n*size {
		return nil, fmt.Errorf("%s: truncated pack index", path)
	}
	return &packIndex{n: n, size: size, ids: b[head : head+n*size]}, nil
}

func (x *packIndex) has(id []byte) bool {
	if len(id) != x.size {
		return false
	}
	lo, hi := 0, x.n
	for lo < hi {
		m := (lo + hi) / 2
		switch bytes.Compare(x.ids[m*x.size:(m+1)*x.size], id) {
		case 0:
			return true
		case -1:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}

func (x *packIndex) all() []string {
	out := make([]string, x.n)
	for i := range out {
		out[i] = hex.EncodeToString(x.ids[i*x.size : (i+1)*x.size])
	}
	return out
}
