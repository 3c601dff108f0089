package beads

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/tidwall/gjson"
)

// Identity is which database bd opens for a Client: bd's own answer
// (`bd where --json`, `bd context --json`) and where that answer lies on
// disk. Two readings that differ in anything name two trackers, or one
// reached another way, and a snapshot read through the second says
// nothing about the first. ralphd pins the Identity at the start of a run
// (an agent can redirect bd with a .beads/redirect file, a database
// directory swapped for a link to a copy, or a server address edited in
// .beads/metadata.json) and compares it before it trusts a snapshot.
type Identity struct {
	// BeadsDir is the .beads directory bd uses, after any redirect
	// (where: "path").
	BeadsDir string `json:"beads_dir"`
	// RedirectedFrom is the .beads directory whose redirect file bd
	// followed, "" when none (where: "redirected_from").
	RedirectedFrom string `json:"redirected_from,omitempty"`
	// DatabasePath is the database directory bd names (where:
	// "database_path"). In server mode the data is on the server, and
	// this directory need not exist.
	DatabasePath string `json:"database_path"`
	// Prefix is the issue prefix bd reports; "" in server mode, where bd
	// 1.0.5 does not report one.
	Prefix string `json:"prefix,omitempty"`
	// Mode is "embedded" (bd's direct mode: the data under DatabasePath)
	// or "server" (a Dolt sql-server).
	Mode string `json:"mode"`
	// ProjectID is the project id bd reports from metadata.json, "" when
	// none.
	ProjectID string `json:"project_id,omitempty"`
	// Server is the server bd connects to in server mode, nil otherwise.
	Server *Server `json:"server,omitempty"`

	// BeadsDirReal and Beads are BeadsDir with every link resolved, and
	// the directory found there.
	BeadsDirReal string `json:"beads_dir_real"`
	Beads        FileID `json:"beads"`
	// DatabaseReal and Database are DatabasePath with every link
	// resolved, and the directory found there: a link swapped in, or a
	// copy moved into its place, is another directory. Zero when it does
	// not exist (server mode).
	DatabaseReal string `json:"database_real,omitempty"`
	Database     FileID `json:"database"`
	// DatabaseLink is the target of DatabasePath when it is itself a
	// symlink, "" when it is not.
	DatabaseLink string `json:"database_link,omitempty"`
}

// Server is the Dolt sql-server a server-mode tracker lives on, as bd
// resolves it: host from BEADS_DOLT_SERVER_HOST, metadata.json or
// config.yaml's dolt.host; port from BEADS_DOLT_SERVER_PORT, the port
// file .beads/dolt-server.port, config.yaml's dolt.port or metadata.json;
// database from BEADS_DOLT_SERVER_DATABASE or metadata.json.
type Server struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Database string `json:"database"`
	// Managed: bd runs this server itself (.beads/dolt-server.pid), and
	// starts it again on a new port whenever it stopped, so the port is
	// not part of the identity.
	Managed bool `json:"managed,omitempty"`
}

// FileID is a file's device and inode: what stays the same however the
// file is reached, and differs for a copy.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IsZero reports whether id names no file.
func (id FileID) IsZero() bool { return id == FileID{} }

func (id FileID) String() string {
	if id.IsZero() {
		return "none"
	}
	return fmt.Sprintf("device %d inode %d", id.Dev, id.Ino)
}

// Where is what `bd where --json` prints.
type Where struct {
	Path           string
	RedirectedFrom string
	DatabasePath   string
	Prefix         string
}

// ParseWhere parses the output of `bd where --json`, bare or enveloped. A
// "path" is required; an error object is a *ReportedError.
func ParseWhere(data []byte) (Where, error) {
	root, err := payload(data)
	if err != nil {
		return Where{}, err
	}
	if !root.IsObject() {
		return Where{}, newBadJSON(data, "want an object, got %s", typeName(root))
	}
	if msg, ok := errorObject(root); ok {
		return Where{}, &ReportedError{Message: msg}
	}
	var w Where
	for _, f := range []struct {
		key string
		dst *string
	}{{"path", &w.Path}, {"redirected_from", &w.RedirectedFrom}, {"database_path", &w.DatabasePath}, {"prefix", &w.Prefix}} {
		if *f.dst, err = stringValue(root.Get(f.key)); err != nil {
			return Where{}, newBadJSON(data, "%s: %v", f.key, err)
		}
	}
	if w.Path == "" {
		return Where{}, newBadJSON(data, "no path")
	}
	return w, nil
}

// Context is the part of `bd context --json` that names the backend.
type Context struct {
	BeadsDir     string
	IsRedirected bool
	DoltMode     string
	ServerHost   string
	ServerPort   int
	Database     string
	ProjectID    string
}

// ParseContext parses the output of `bd context --json`, bare or
// enveloped.
func ParseContext(data []byte) (Context, error) {
	root, err := payload(data)
	if err != nil {
		return Context{}, err
	}
	if !root.IsObject() {
		return Context{}, newBadJSON(data, "want an object, got %s", typeName(root))
	}
	if msg, ok := errorObject(root); ok {
		return Context{}, &ReportedError{Message: msg}
	}
	var c Context
	for _, f := range []struct {
		key string
		dst *string
	}{{"beads_dir", &c.BeadsDir}, {"dolt_mode", &c.DoltMode}, {"server_host", &c.ServerHost}, {"database", &c.Database}, {"project_id", &c.ProjectID}} {
		if *f.dst, err = stringValue(root.Get(f.key)); err != nil {
			return Context{}, newBadJSON(data, "%s: %v", f.key, err)
		}
	}
	if c.ServerPort, err = intValue(root.Get("server_port")); err != nil {
		return Context{}, newBadJSON(data, "server_port: %v", err)
	}
	if r := root.Get("is_redirected"); r.Exists() && r.Type != gjson.True && r.Type != gjson.False && r.Type != gjson.Null {
		return Context{}, newBadJSON(data, "is_redirected: want a boolean, got %s", typeName(r))
	}
	c.IsRedirected = root.Get("is_redirected").Type == gjson.True
	return c, nil
}

// ReadIdentity asks bd which database it opens (two calls: where and
// context) and finds the directories it names on disk.
func (c *Client) ReadIdentity(ctx context.Context) (Identity, error) {
	out, err := c.RunJSON(ctx, "where")
	if err != nil {
		return Identity{}, err
	}
	w, err := ParseWhere(out)
	if err != nil {
		return Identity{}, fmt.Errorf("bd where --json: %w", err)
	}
	if out, err = c.RunJSON(ctx, "context"); err != nil {
		return Identity{}, err
	}
	bc, err := ParseContext(out)
	if err != nil {
		return Identity{}, fmt.Errorf("bd context --json: %w", err)
	}
	id := Identity{
		BeadsDir: c.abs(w.Path), RedirectedFrom: c.abs(w.RedirectedFrom), DatabasePath: c.abs(w.DatabasePath),
		Prefix: w.Prefix, Mode: "embedded", ProjectID: bc.ProjectID,
	}
	if bc.DoltMode == "server" || bc.ServerHost != "" || bc.ServerPort != 0 {
		id.Mode = "server"
		id.Server = &Server{Host: bc.ServerHost, Port: bc.ServerPort, Database: bc.Database}
	}
	return id.Restat()
}

// Restat returns id with what it records of the directories bd named
// read again from the filesystem, without asking bd: the .beads
// directory and the database directory with every link resolved, and
// what is found there (device and inode), the database directory's own
// link, and whether bd runs its server itself. A directory swapped for a
// link or a copy shows in it; a change to which directories bd names
// does not (only ReadIdentity asks bd that).
func (id Identity) Restat() (Identity, error) {
	id.BeadsDirReal, id.Beads = "", FileID{}
	id.DatabaseReal, id.Database, id.DatabaseLink = "", FileID{}, ""
	if id.Server != nil {
		s := *id.Server
		_, err := os.Lstat(filepath.Join(id.BeadsDir, "dolt-server.pid"))
		s.Managed = err == nil
		id.Server = &s
	}
	var err error
	if id.BeadsDirReal, id.Beads, err = resolveDir(id.BeadsDir); err != nil {
		return Identity{}, fmt.Errorf("tracker directory %s: %w", id.BeadsDir, err)
	}
	if id.DatabasePath != "" {
		if fi, err := os.Lstat(id.DatabasePath); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			id.DatabaseLink, _ = os.Readlink(id.DatabasePath)
		}
		real, fid, err := resolveDir(id.DatabasePath)
		switch {
		case err == nil:
			id.DatabaseReal, id.Database = real, fid
		case errors.Is(err, fs.ErrNotExist) && id.Mode == "server":
			// Server mode keeps nothing there.
		default:
			return Identity{}, fmt.Errorf("database directory %s: %w", id.DatabasePath, err)
		}
	}
	return id, nil
}

// abs makes a path bd printed absolute against the Client's directory.
func (c *Client) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	dir := c.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return filepath.Join(dir, p)
}

// resolveDir returns p with every link resolved and the device and inode
// of what is there.
func resolveDir(p string) (string, FileID, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", FileID{}, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", FileID{}, err
	}
	return real, fileID(fi), nil
}

// fileID is fi's device and inode (zero where the platform has none).
func fileID(fi fs.FileInfo) FileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}
	}
	return FileID{Dev: uint64(st.Dev), Ino: st.Ino} //nolint:unconvert // Dev is int32 on some platforms
}

// FileIDOf returns the device and inode of the file at p (links
// followed), zero when there is none.
func FileIDOf(p string) FileID {
	fi, err := os.Stat(p)
	if err != nil {
		return FileID{}
	}
	return fileID(fi)
}

// IdentityChange is one way two Identities differ.
type IdentityChange struct {
	// Field names what changed: "redirect", "beads_dir", "beads_dir_id",
	// "database_path", "database_link", "database_real_path",
	// "database_dir", "prefix", "mode", "project_id", "server_host",
	// "server_port" or "server_database".
	Field    string
	Was, Now string
}

// String says what changed, for violations and errors.
func (c IdentityChange) String() string {
	show := func(s string) string {
		if s == "" {
			return "none"
		}
		return s
	}
	switch c.Field {
	case "redirect":
		if c.Was == "" {
			return fmt.Sprintf("bd now follows a redirect file in %s", c.Now)
		}
		if c.Now == "" {
			return fmt.Sprintf("bd no longer follows the redirect file in %s", c.Was)
		}
	case "database_dir":
		return fmt.Sprintf("the database directory was replaced: it was %s, it is now %s", c.Was, c.Now)
	case "database_link":
		switch {
		case c.Was == "":
			return fmt.Sprintf("the database directory was replaced by a symlink to %s", c.Now)
		case c.Now == "":
			return fmt.Sprintf("the database directory's symlink to %s was replaced by a directory", c.Was)
		}
	}
	return fmt.Sprintf("the tracker's %s changed from %s to %s", c.Field, show(c.Was), show(c.Now))
}

// Compare returns how now differs from want, the pinned Identity, in a
// fixed order; none when bd opens the same database the same way.
func (want Identity) Compare(now Identity) []IdentityChange {
	var out []IdentityChange
	add := func(field, was, is string) int {
		if was == is {
			return 0
		}
		out = append(out, IdentityChange{Field: field, Was: was, Now: is})
		return 1
	}
	// Each move is named once, by the first thing that shows it: a
	// different path implies a different directory there.
	add("redirect", want.RedirectedFrom, now.RedirectedFrom)
	if add("beads_dir", want.BeadsDirReal, now.BeadsDirReal) == 0 {
		add("beads_dir_id", want.Beads.String(), now.Beads.String())
	}
	if add("database_path", want.DatabasePath, now.DatabasePath)+add("database_link", want.DatabaseLink, now.DatabaseLink) == 0 &&
		add("database_real_path", want.DatabaseReal, now.DatabaseReal) == 0 {
		add("database_dir", want.Database.String(), now.Database.String())
	}
	add("prefix", want.Prefix, now.Prefix)
	add("mode", want.Mode, now.Mode)
	add("project_id", want.ProjectID, now.ProjectID)
	var ws, ns Server
	if want.Server != nil {
		ws = *want.Server
	}
	if now.Server != nil {
		ns = *now.Server
	}
	add("server_host", ws.Host, ns.Host)
	if !ws.Managed || !ns.Managed {
		add("server_port", portText(ws.Port), portText(ns.Port))
	}
	add("server_database", ws.Database, ns.Database)
	return out
}

func portText(p int) string {
	if p == 0 {
		return ""
	}
	return strconv.Itoa(p)
}
