package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// A filesystem with no mount: a root, a directory "t-0" holding "00.log", and a file "cp" at the root.
func testFS(t *testing.T) (*unsyncFS, *node, *node) {
	t.Helper()
	dir := t.TempDir()
	fs := &unsyncFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), nodes: map[uint64]*node{}, nextIno: fuse.FUSE_ROOT_ID}
	fs.root = fs.newNode(true, syscall.S_IFDIR|0o755, 0, 0)
	part := fs.newNode(true, syscall.S_IFDIR|0o755, 0, 0)
	fs.link(fs.root, "t-0", part, opMkdir)
	seg := fs.newNode(false, syscall.S_IFREG|0o644, 0, 0)
	fs.link(part, "00.log", seg, opCreate)
	cp := fs.newNode(false, syscall.S_IFREG|0o644, 0, 0)
	fs.link(fs.root, "cp", cp, opCreate)
	fs.initFaults(filepath.Join(dir, "faults.json"), filepath.Join(dir, "status.json"))
	return fs, seg, cp
}

func setRules(t *testing.T, fs *unsyncFS, gen int64, rules ...*faultRule) faultStatus {
	t.Helper()
	data, err := json.Marshal(faultControl{Generation: gen, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fs.faults.control, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fs.loadFaults()
	return readStatus(t, fs)
}

func readStatus(t *testing.T, fs *unsyncFS) faultStatus {
	t.Helper()
	fs.writeStatus()
	var st faultStatus
	data, err := os.ReadFile(fs.faults.statusPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestViewPath(t *testing.T) {
	fs, seg, cp := testFS(t)
	if got := fs.viewPath(seg); got != "t-0/00.log" {
		t.Fatalf("viewPath(seg) = %q", got)
	}
	if got := fs.viewPath(cp); got != "cp" {
		t.Fatalf("viewPath(cp) = %q", got)
	}
}

func TestRulePaths(t *testing.T) {
	for _, c := range []struct {
		rule, path string
		want       bool
	}{
		{"", "t-0/00.log", true}, {"t-0", "t-0/00.log", true}, {"t-0", "t-0", true}, {"t-0", "t-00/x", false},
		{"t", "t-0/00.log", false}, {"*/t-0", "dir-1/t-0/00.log", true}, {"*/t-0", "t-0/00.log", false},
		{"*/t-0", "dir-1/t-1/00.log", false}, {"*/", "dir-1/x", true},
	} {
		if got := (&faultRule{Path: c.rule}).matches(c.path); got != c.want {
			t.Errorf("rule %q on %q: %v, want %v", c.rule, c.path, got, c.want)
		}
	}
}

func TestNoRulesNoErrors(t *testing.T) {
	fs, seg, _ := testFS(t)
	for i := 0; i < 100; i++ {
		if st := fs.injected(seg, opWrite, 100); st != fuse.OK {
			t.Fatalf("no rule, got %v", st)
		}
	}
	if d := fs.delay(seg.ino, opFsync); d != 0 {
		t.Fatalf("no rule, delay %v", d)
	}
}

func TestDiskErrorEveryCallOnItsPathAndOps(t *testing.T) {
	fs, seg, cp := testFS(t)
	st := setRules(t, fs, 1, &faultRule{ID: "e", Kind: "disk-error", Path: "t-0", Ops: []string{"write", "fsync"}, P: 1})
	if st.Generation != 1 || st.Error != "" {
		t.Fatalf("status %+v", st)
	}
	if got := fs.injected(seg, opWrite, 10); got != fuse.EIO {
		t.Fatalf("write under t-0: %v, want EIO", got)
	}
	if got := fs.injected(seg, opFsync, 0); got != fuse.EIO {
		t.Fatalf("fsync under t-0: %v, want EIO", got)
	}
	if got := fs.injected(seg, opRead, 0); got != fuse.OK {
		t.Fatalf("read (not in ops): %v", got)
	}
	if got := fs.injected(cp, opWrite, 10); got != fuse.OK {
		t.Fatalf("write outside t-0: %v", got)
	}
	st = readStatus(t, fs)
	r := st.Rules[0]
	if r.Counts["eio-write"] != 1 || r.Counts["eio-fsync"] != 1 || r.Files["t-0/00.log"]["eio-write"] != 1 {
		t.Fatalf("counts %v files %v", r.Counts, r.Files)
	}
	// Stopped: no more errors, the counts kept in the status, inactive.
	st = setRules(t, fs, 2)
	if got := fs.injected(seg, opWrite, 10); got != fuse.OK {
		t.Fatalf("after the stop: %v", got)
	}
	if len(st.Rules) != 1 || st.Rules[0].Active || st.Rules[0].Counts["eio-write"] != 1 {
		t.Fatalf("status after the stop %+v", st.Rules)
	}
}

func TestDiskErrorProbability(t *testing.T) {
	fs, seg, _ := testFS(t)
	setRules(t, fs, 1, &faultRule{ID: "e", Kind: "disk-error", Path: "", Ops: []string{"read"}, P: 0.25})
	failed := 0
	for i := 0; i < 4000; i++ {
		if fs.injected(seg, opRead, 0) == fuse.EIO {
			failed++
		}
	}
	if failed < 800 || failed > 1200 {
		t.Fatalf("p=0.25 failed %d of 4000", failed)
	}
	if got := readStatus(t, fs).Rules[0].Counts["eio-read"]; got != int64(failed) {
		t.Fatalf("counted %d, failed %d", got, failed)
	}
}

func TestDiskFullAfterFreeBytesAndBackAtStop(t *testing.T) {
	fs, seg, _ := testFS(t)
	setRules(t, fs, 1, &faultRule{ID: "f", Kind: "disk-full", Path: "t-0", FreeBytes: 1000})
	if got := fs.injected(seg, opWrite, 600); got != fuse.OK {
		t.Fatalf("first 600: %v", got)
	}
	if got := fs.injected(seg, opWrite, 0); got != fuse.OK { // an overwrite grows nothing
		t.Fatalf("overwrite: %v", got)
	}
	if got := fs.injected(seg, opWrite, 500); got != fuse.Status(syscall.ENOSPC) {
		t.Fatalf("past the free bytes: %v, want ENOSPC", got)
	}
	if got := fs.injected(seg, opWrite, 400); got != fuse.OK {
		t.Fatalf("exactly the rest: %v", got)
	}
	st := readStatus(t, fs)
	if st.Rules[0].Counts["enospc-write"] != 1 || st.Rules[0].Used != 1000 {
		t.Fatalf("status %+v", st.Rules[0])
	}
	setRules(t, fs, 2)
	if got := fs.injected(seg, opWrite, 5000); got != fuse.OK {
		t.Fatalf("after the stop: %v", got)
	}
}

func TestSlowDiskDelaysFsyncAndOptionallyWrites(t *testing.T) {
	fs, seg, cp := testFS(t)
	setRules(t, fs, 1, &faultRule{ID: "s", Kind: "slow-disk", Path: "t-0", DelayMs: 50, JitterMs: 10})
	if d := fs.delay(seg.ino, opFsync); d < 50*time.Millisecond || d > 60*time.Millisecond {
		t.Fatalf("fsync delay %v, want 50..60 ms", d)
	}
	if d := fs.delay(seg.ino, opWrite); d != 0 {
		t.Fatalf("write delayed %v without writes", d)
	}
	if d := fs.delay(cp.ino, opFsync); d != 0 {
		t.Fatalf("outside the path delayed %v", d)
	}
	setRules(t, fs, 2, &faultRule{ID: "s2", Kind: "slow-disk", Path: "", DelayMs: 20, Writes: true})
	if d := fs.delay(cp.ino, opWrite); d != 20*time.Millisecond {
		t.Fatalf("write delay %v, want 20 ms", d)
	}
	st := readStatus(t, fs)
	var s, s2 *faultRule
	for _, r := range st.Rules {
		if r.ID == "s" {
			s = r
		} else {
			s2 = r
		}
	}
	if s.Active || s.Counts["delayed-fsync"] != 1 || s.Counts["delay-ms"] < 50 || s2.Counts["delayed-write"] != 1 {
		t.Fatalf("counts s %+v s2 %+v", s, s2)
	}
}

func TestBadControlChangesNothing(t *testing.T) {
	fs, seg, _ := testFS(t)
	setRules(t, fs, 1, &faultRule{ID: "e", Kind: "disk-error", Ops: []string{"write"}, P: 1})
	for _, bad := range []*faultRule{
		{ID: "x", Kind: "disk-error", Ops: []string{"write"}, P: 1.5},
		{ID: "x", Kind: "disk-error", Ops: []string{"unlink"}, P: 1},
		{ID: "x", Kind: "disk-full", FreeBytes: -1},
		{ID: "x", Kind: "slow-disk", DelayMs: -1},
		{ID: "x", Kind: "disk-error", Ops: []string{"write"}, P: 1, Path: "../etc"},
		{ID: "x", Kind: "melt"},
	} {
		st := setRules(t, fs, 2, bad)
		if st.Error == "" || st.Generation != 2 {
			t.Fatalf("rule %+v accepted: %+v", bad, st)
		}
		if got := fs.injected(seg, opWrite, 1); got != fuse.EIO {
			t.Fatalf("the refused file changed the active rules: %v", got)
		}
	}
}
