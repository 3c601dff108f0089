package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// BDChecksDirName is the directory under the state root that keeps the
// result of the last `ralphd doctor --bd` run per bd version. It is
// machine-wide, not per project: a bd version behaves the same
// everywhere.
const BDChecksDirName = "bd-contract"

// BDCheck is the result of one `ralphd doctor --bd` run.
type BDCheck struct {
	Version   string    `json:"version"` // bd's version number
	Bin       string    `json:"bin"`     // the binary checked
	CheckedAt time.Time `json:"checked_at"`
	Passed    bool      `json:"passed"`
	// Differences are the failed cases, "case: difference" each.
	Differences []string `json:"differences,omitempty"`
}

var plainVersion = regexp.MustCompile(`^[0-9][0-9A-Za-z.+_-]{0,63}$`)

// bdCheckName is the file of version's check under the state root:
// bd-contract/<version>.json, or a hash of the version when it is not
// plain.
func bdCheckName(version string) string {
	name := version
	if !plainVersion.MatchString(version) {
		sum := sha256.Sum256([]byte(version))
		name = "sha256-" + hex.EncodeToString(sum[:8])
	}
	return BDChecksDirName + "/" + name + ".json"
}

// WriteBDCheck records c under the state root, replacing the record of
// the same version atomically, through an atomicfile.Dir as every state
// file is written: no link in the state root is followed.
func WriteBDCheck(root string, c BDCheck) error {
	if c.Version == "" {
		return errors.New("record a bd check: no version")
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("record a bd check: %w", err)
	}
	d, err := atomicfile.MakeDirAll(root, dirPerm)
	if err != nil {
		return fmt.Errorf("record a bd check: %w", err)
	}
	defer d.Close()
	sub, err := d.MakeDir(BDChecksDirName, dirPerm)
	if err != nil {
		return fmt.Errorf("record a bd check: %w", err)
	}
	_ = sub.Close()
	if err := d.WriteFile(bdCheckName(c.Version), append(data, '\n'), filePerm); err != nil {
		return fmt.Errorf("record a bd check: %w", err)
	}
	return nil
}

// ReadBDCheck returns the recorded check of a bd version; found is false
// when there is none.
func ReadBDCheck(root, version string) (c BDCheck, found bool, err error) {
	d, err := atomicfile.OpenDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return BDCheck{}, false, nil
	}
	if err != nil {
		return BDCheck{}, false, fmt.Errorf("read the bd check of %s: %w", version, err)
	}
	defer d.Close()
	name := bdCheckName(version)
	data, err := d.ReadFile(name, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return BDCheck{}, false, nil
	}
	if err != nil {
		return BDCheck{}, false, fmt.Errorf("read the bd check of %s: %w", version, err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return BDCheck{}, false, fmt.Errorf("read the bd check of %s: %s: %w", version, d.Join(name), err)
	}
	if c.Version != version {
		return BDCheck{}, false, fmt.Errorf("read the bd check of %s: %s records version %q", version, d.Join(name), c.Version)
	}
	return c, true, nil
}
