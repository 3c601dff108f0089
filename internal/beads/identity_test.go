package beads

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
)

// TestReadIdentityOverStandin pins a tracker's identity through the
// stand-in bd, changes how bd reaches the tracker the ways an agent
// without the sandbox can, and reads it again: Compare names exactly what
// changed, and nothing when only the data did.
func TestReadIdentityOverStandin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stand-in bd")
	}
	bin, err := standintest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	sh := func(t *testing.T, env []string, dir, script string) {
		t.Helper()
		run(t, env, dir, "sh", "-c", script)
	}
	for _, tc := range []struct {
		name   string
		server bool
		// change runs in the repo, with $BD the stand-in and $ROOT the
		// test's scratch directory.
		change string
		want   []string // IdentityChange.Field, in Compare's order
		says   string   // in the first change's String
	}{{
		name:   "nothing changed but the data",
		change: `$BD create 'More work' -q >/dev/null && $BD update t-a --priority 0 >/dev/null`,
	}, {
		name:   "redirect file added",
		change: `cp -a .beads "$ROOT/decoy" && echo "$ROOT/decoy" > .beads/redirect`,
		want:   []string{"redirect", "beads_dir", "database_path"},
		says:   "bd now follows a redirect file in ",
	}, {
		name:   "database dir swapped for a link to a copy",
		change: `cp -a .beads/embeddeddolt "$ROOT/copy" && mv .beads/embeddeddolt "$ROOT/real" && ln -s "$ROOT/copy" .beads/embeddeddolt`,
		want:   []string{"database_link"},
		says:   "the database directory was replaced by a symlink to ",
	}, {
		name:   "database dir replaced by a copy",
		change: `cp -a .beads/embeddeddolt "$ROOT/copy" && mv .beads/embeddeddolt "$ROOT/real" && mv "$ROOT/copy" .beads/embeddeddolt`,
		want:   []string{"database_dir"},
		says:   "the database directory was replaced: it was device ",
	}, {
		name:   "prefix changed",
		change: `sed -i 's/"prefix": *"t"/"prefix": "u"/' .beads/embeddeddolt/t/.dolt/standin.json`,
		want:   []string{"prefix"},
		says:   "the tracker's prefix changed from t to u",
	}, {
		name:   "server host and port changed in metadata",
		server: true,
		change: `rm -f .beads/dolt-server.port && sed -i -e 's/"127.0.0.1"/"localhost"/' -e 's/45011/45012/' .beads/metadata.json`,
		want:   []string{"server_host", "server_port"},
		says:   "the tracker's server_host changed from 127.0.0.1 to localhost",
	}, {
		name:   "server port file changed",
		server: true,
		change: `echo 45012 > .beads/dolt-server.port`,
		want:   []string{"server_port"},
		says:   "the tracker's server_port changed from 45011 to 45012",
	}, {
		name:   "server database changed in metadata",
		server: true,
		change: `sed -i 's/"dolt_database": "t"/"dolt_database": "u"/' .beads/metadata.json`,
		want:   []string{"server_database"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			root := t.TempDir()
			repo := filepath.Join(root, "repo")
			servers := filepath.Join(root, "servers")
			for _, d := range []string{repo, filepath.Join(servers, "127.0.0.1_45011"), filepath.Join(servers, "localhost_45012"), filepath.Join(servers, "127.0.0.1_45012")} {
				is.NoErr(os.MkdirAll(d, 0o755))
			}
			env := []string{"HOME=" + root, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
				"BD=" + bin, "ROOT=" + root, "BD_STANDIN_SERVER_ROOT=" + servers}
			run(t, env, repo, "git", "init", "-q")
			if tc.server {
				run(t, env, repo, bin, "init", "--prefix", "t", "--quiet", "--server", "--server-host", "127.0.0.1", "--server-port", "45011", "--external")
				// Each "server" the change can point at holds a tracker.
				sh(t, env, root, `for d in localhost_45012 127.0.0.1_45012; do cp -a servers/127.0.0.1_45011/. servers/$d/; done && cp -a servers/127.0.0.1_45011/t servers/127.0.0.1_45011/u`)
			} else {
				run(t, env, repo, bin, "init", "--prefix", "t", "--quiet")
			}
			run(t, env, repo, bin, "create", "Work", "--id", "t-a", "-q")
			c := &Client{Bin: bin, Dir: repo, Env: env, Timeout: time.Minute}
			ctx := context.Background()

			pin, err := c.ReadIdentity(ctx)
			is.NoErr(err)
			is.True(pin.BeadsDir != "" && pin.DatabasePath != "") // bd named its tracker
			if tc.server {
				is.Equal(pin.Mode, "server")
				is.Equal(*pin.Server, Server{Host: "127.0.0.1", Port: 45011, Database: "t"})
			} else {
				is.Equal(pin.Mode, "embedded")
				is.Equal(pin.Prefix, "t")
				is.True(!pin.Database.IsZero()) // the embedded database directory was found
			}
			is.True(pin.ProjectID != "") // the stand-in reports a project id

			sh(t, env, repo, tc.change)
			now, err := c.ReadIdentity(ctx)
			is.NoErr(err)
			changes := pin.Compare(now)
			var fields []string
			for _, ch := range changes {
				fields = append(fields, ch.Field)
			}
			is.Equal(fields, tc.want) // exactly what changed
			if tc.says != "" {
				is.True(strings.Contains(changes[0].String(), tc.says)) // says it in words
			}
			is.Equal(len(now.Compare(now)), 0) // a reading is its own identity
		})
	}
}

// TestCompareManagedServerPort: a server bd runs itself comes back on a
// new port, which is not a change of tracker; any other port change is.
func TestCompareManagedServerPort(t *testing.T) {
	is := is.New(t)
	was := Identity{Mode: "server", Server: &Server{Host: "127.0.0.1", Port: 3307, Database: "t", Managed: true}}
	now := was
	now.Server = &Server{Host: "127.0.0.1", Port: 4000, Database: "t", Managed: true}
	is.Equal(len(was.Compare(now)), 0) // bd restarted its own server
	now.Server.Managed = false
	is.True(slices.ContainsFunc(was.Compare(now), func(c IdentityChange) bool { return c.Field == "server_port" })) // not bd's own server any more
	now.Server = nil
	now.Mode = "embedded"
	got := was.Compare(now)
	is.True(slices.ContainsFunc(got, func(c IdentityChange) bool { return c.Field == "mode" })) // server to embedded
}
