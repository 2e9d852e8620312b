package main

// Disk faults: rules read from a control file at SIGHUP, each acting on the files under a path
// prefix of the mount (relative to its root; "" is the whole mount; "*/P": P under any top directory):
//   - disk-error: EIO on the rule's ops (write, fsync, read), each call with probability p;
//   - disk-full:  ENOSPC on a write that would grow the files under the prefix past free_bytes
//     more than they held when the rule started (the space comes back when the rule goes);
//   - slow-disk:  every fsync (and with writes, every write) waits delay_ms plus a uniform
//     0..jitter_ms first, outside the filesystem's lock (other calls go on meanwhile).
// Every call a rule failed or delayed is counted per rule and per file; the status file (JSON,
// replaced atomically) holds the counts of every rule this process ran, at most
// statusEvery late, and the generation of the control file it last applied (or why it refused it).
// With no rule active the operations pay one atomic load.

import (
	"encoding/json"
	"fmt"
	"log"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

const (
	statusEvery   = 200 * time.Millisecond
	maxFilesCount = 500 // files counted apart per rule; the rest only in the rule's totals
)

type faultOp string

const (
	opWrite faultOp = "write"
	opFsync faultOp = "fsync"
	opRead  faultOp = "read"
)

// faultRule is one rule as the control file says it, with what it did.
type faultRule struct {
	ID        string   `json:"id"`   // the caller's name for it (the nemesis' fault key)
	Kind      string   `json:"kind"` // disk-error, disk-full, slow-disk
	Path      string   `json:"path"`
	Ops       []string `json:"ops,omitempty"`
	P         float64  `json:"p,omitempty"`
	FreeBytes int64    `json:"free_bytes,omitempty"`
	DelayMs   float64  `json:"delay_ms,omitempty"`
	JitterMs  float64  `json:"jitter_ms,omitempty"`
	Writes    bool     `json:"writes,omitempty"`

	Active bool                        `json:"active"`
	Used   int64                       `json:"used_bytes,omitempty"` // disk-full: bytes grown since it started
	Counts map[string]int64            `json:"counts"`               // eio-write, enospc-write, delayed-fsync, delay-ms...
	Files  map[string]map[string]int64 `json:"files"`                // the same, per file
}

type faultControl struct {
	Generation int64        `json:"generation"`
	Rules      []*faultRule `json:"rules"`
}

type faultStatus struct {
	Generation int64        `json:"generation"` // of the last control file read
	Error      string       `json:"error,omitempty"`
	Rules      []*faultRule `json:"rules"` // every rule this process ran, the active ones first
}

// diskFaults: the rules and their counts; guarded by unsyncFS.mu, except `on`.
type diskFaults struct {
	on         atomic.Bool // any rule active: the operations' fast path reads only this
	control    string
	statusPath string
	active     []*faultRule
	done       []*faultRule
	generation int64
	err        string
	dirty      bool
	rng        *rand.Rand
}

// matches says whether the file at `path` is the rule's path or under it; a rule's path that starts with "*/"
// stands for that path under any top directory (a partition's directory in whichever log directory holds it).
func (r *faultRule) matches(path string) bool {
	want := r.Path
	if strings.HasPrefix(want, "*/") {
		i := strings.IndexByte(path, '/')
		if i < 0 {
			return false
		}
		want, path = want[2:], path[i+1:]
	}
	return want == "" || path == want || strings.HasPrefix(path, want+"/")
}

func (r *faultRule) hasOp(op faultOp) bool {
	for _, o := range r.Ops {
		if o == string(op) {
			return true
		}
	}
	return false
}

func (r *faultRule) count(what, file string, by int64) {
	r.Counts[what] += by
	f, ok := r.Files[file]
	if !ok {
		if len(r.Files) >= maxFilesCount {
			return
		}
		f = map[string]int64{}
		r.Files[file] = f
	}
	f[what] += by
}

func (r *faultRule) validate() error {
	switch r.Kind {
	case "disk-error":
		if r.P < 0 || r.P > 1 {
			return fmt.Errorf("rule %s: p %v is outside [0, 1]", r.ID, r.P)
		}
		if len(r.Ops) == 0 {
			return fmt.Errorf("rule %s: no ops", r.ID)
		}
		for _, o := range r.Ops {
			if o != string(opWrite) && o != string(opFsync) && o != string(opRead) {
				return fmt.Errorf("rule %s: op %q is not write, fsync or read", r.ID, o)
			}
		}
	case "disk-full":
		if r.FreeBytes < 0 {
			return fmt.Errorf("rule %s: free_bytes %d is negative", r.ID, r.FreeBytes)
		}
	case "slow-disk":
		if r.DelayMs < 0 || r.JitterMs < 0 {
			return fmt.Errorf("rule %s: negative delay", r.ID)
		}
	default:
		return fmt.Errorf("rule %s: unknown kind %q", r.ID, r.Kind)
	}
	if strings.HasPrefix(r.Path, "/") || r.Path == ".." || strings.HasPrefix(r.Path, "../") || strings.Contains(r.Path, "/../") {
		return fmt.Errorf("rule %s: path %q is not inside the mount", r.ID, r.Path)
	}
	return nil
}

// viewPath is the node's path as users see it, relative to the mount root ("" for the root; an unlinked node's
// own name under "(unlinked)").
func (fs *unsyncFS) viewPath(n *node) string {
	var parts []string
	for p := n; p != fs.root; p = p.vparent {
		if p.vparent == nil {
			return "(unlinked)/" + n.vname
		}
		parts = append(parts, p.vname)
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "/")
}

// loadFaults reads the control file and makes its rules the active ones (SIGHUP). A rule that stays (same id)
// keeps its counts; a rule that goes is kept, inactive, for the status. A file that does not parse or holds a bad
// rule changes nothing; the status says why.
func (fs *unsyncFS) loadFaults() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	df := &fs.faults
	df.dirty = true
	if df.control == "" {
		df.err = "no -faults control file"
		return
	}
	data, err := os.ReadFile(df.control)
	var ctl faultControl
	if err == nil {
		err = json.Unmarshal(data, &ctl)
	}
	if err == nil {
		for _, r := range ctl.Rules {
			if err = r.validate(); err != nil {
				break
			}
		}
	}
	df.generation = ctl.Generation
	if err != nil {
		df.err = err.Error()
		log.Printf("faults: refused generation %d: %v", ctl.Generation, err)
		return
	}
	df.err = ""
	old := map[string]*faultRule{}
	for _, r := range df.active {
		old[r.ID] = r
	}
	var next []*faultRule
	for _, r := range ctl.Rules {
		if prev, ok := old[r.ID]; ok {
			delete(old, r.ID)
			next = append(next, prev)
			continue
		}
		r.Active, r.Counts, r.Files = true, map[string]int64{}, map[string]map[string]int64{}
		next = append(next, r)
		log.Printf("faults: started %s %s on %q", r.ID, r.Kind, r.Path)
	}
	for _, r := range df.active {
		if _, gone := old[r.ID]; gone {
			r.Active = false
			df.done = append(df.done, r)
			log.Printf("faults: stopped %s %s on %q: %v", r.ID, r.Kind, r.Path, r.Counts)
		}
	}
	df.active = next
	df.on.Store(len(next) > 0)
}

// injected is the error an operation on `n` gets from the active rules (fuse.OK: none); `grow` is how many
// bytes a write adds to the file's size. Called with fs.mu held.
func (fs *unsyncFS) injected(n *node, op faultOp, grow int64) fuse.Status {
	if !fs.faults.on.Load() {
		return fuse.OK
	}
	df := &fs.faults
	path := fs.viewPath(n)
	for _, r := range df.active {
		if !r.matches(path) {
			continue
		}
		switch r.Kind {
		case "disk-error":
			if r.hasOp(op) && (r.P >= 1 || df.rng.Float64() < r.P) {
				r.count("eio-"+string(op), path, 1)
				df.dirty = true
				return fuse.EIO
			}
		case "disk-full":
			if op == opWrite && grow > 0 {
				if r.Used+grow > r.FreeBytes {
					r.count("enospc-write", path, 1)
					df.dirty = true
					return fuse.Status(syscall.ENOSPC)
				}
				r.Used += grow
			}
		}
	}
	return fuse.OK
}

// delay is how long an operation on inode `ino` waits first (slow-disk), counted; it takes the lock itself.
func (fs *unsyncFS) delay(ino uint64, op faultOp) time.Duration {
	if !fs.faults.on.Load() {
		return 0
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, ok := fs.nodes[ino]
	if !ok {
		return 0
	}
	df := &fs.faults
	path := fs.viewPath(n)
	var total time.Duration
	for _, r := range df.active {
		if r.Kind != "slow-disk" || !r.matches(path) || (op == opWrite && !r.Writes) || op == opRead {
			continue
		}
		ms := r.DelayMs
		if r.JitterMs > 0 {
			ms += df.rng.Float64() * r.JitterMs
		}
		r.count("delayed-"+string(op), path, 1)
		r.count("delay-ms", path, int64(ms))
		df.dirty = true
		total += time.Duration(ms * float64(time.Millisecond))
	}
	return total
}

// writeStatus replaces the status file when something changed since it was last written.
func (fs *unsyncFS) writeStatus() {
	fs.mu.Lock()
	df := &fs.faults
	if !df.dirty || df.statusPath == "" {
		fs.mu.Unlock()
		return
	}
	df.dirty = false
	st := faultStatus{Generation: df.generation, Error: df.err, Rules: append(append([]*faultRule{}, df.active...), df.done...)}
	data, err := json.Marshal(st)
	fs.mu.Unlock()
	if err != nil {
		log.Printf("error: faults status: %v", err)
		return
	}
	tmp := df.statusPath + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		log.Printf("error: faults status: %v", err)
		return
	}
	if err := os.Rename(tmp, df.statusPath); err != nil {
		log.Printf("error: faults status: %v", err)
	}
}

func (fs *unsyncFS) statusLoop() {
	for range time.Tick(statusEvery) {
		fs.writeStatus()
	}
}

func (fs *unsyncFS) initFaults(control, status string) {
	fs.faults.control, fs.faults.statusPath = control, status
	fs.faults.rng = rand.New(rand.NewSource(time.Now().UnixNano()))
	if status != "" {
		if control != "" && filepath.Clean(control) == filepath.Clean(status) {
			log.Fatalf("unsyncfs: -faults and -status name the same file")
		}
		fs.faults.dirty = true
		fs.writeStatus()
		go fs.statusLoop()
	}
}
