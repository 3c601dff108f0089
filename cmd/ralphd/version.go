package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = ""
	commit  = ""
)

// buildInfo is ralphd's version, commit and Go version, from ldflags when
// set and from the module build info otherwise.
type buildInfo struct {
	Version string
	Commit  string
	Go      string
}

func readBuildInfo() buildInfo {
	bi := buildInfo{Version: version, Commit: commit, Go: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if bi.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			bi.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && bi.Commit == "" {
				bi.Commit = s.Value
				if len(bi.Commit) > 12 {
					bi.Commit = bi.Commit[:12]
				}
			}
		}
	}
	if bi.Version == "" {
		bi.Version = "dev"
	}
	if bi.Commit == "" {
		bi.Commit = "unknown"
	}
	return bi
}

func cmdVersion(stdout io.Writer) int {
	bi := readBuildInfo()
	fmt.Fprintf(stdout, "ralphd %s (commit %s, %s)\n", bi.Version, bi.Commit, bi.Go)
	return exitOK
}
