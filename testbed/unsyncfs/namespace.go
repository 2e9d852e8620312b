package main

// The namespace: what users see (every node's view parent and name, in memory) and
// what is durable (the backing directory's tree, each node's committed parent and
// name). Every create, mkdir, unlink, rmdir and rename changes the view at once and
// joins the pending log; an fsync commits a prefix of that log to the backing tree,
// in order, as a journaling filesystem commits its journal:
//   - mode "journal" (ext4-like): any fsync, of a file or a directory, commits all of it;
//   - mode "strict" (POSIX's minimum): an fsync of directory D commits the log up to the
//     last operation that touched D; a file's fsync commits no name.

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

type opKind int

const (
	opCreate opKind = iota
	opMkdir
	opUnlink
	opRmdir
	opRename
)

type nsOp struct {
	kind     opKind
	parent   *node // the directory (for a rename: the source directory)
	name     string
	parent2  *node // rename: the target directory
	name2    string
	n        *node // the node created, removed or renamed
	replaced *node // rename: the node the target name held, if any
}

func (o *nsOp) touches(dir *node) bool {
	return o.parent == dir || o.parent2 == dir
}

type node struct {
	ino      uint64
	dir      bool
	mode     uint32 // with the type bits
	uid, gid uint32
	atime    int64 // ns
	mtime    int64
	ctime    int64
	children map[string]*node // directories: the view's entries
	vparent  *node            // the view's parent (nil: not linked, or the root)
	vname    string           // the view's name in vparent (the last one, once unlinked)
	cparent  *node            // the committed parent (nil: the name is not durable, or the root)
	cname    string
	data     *fileData // files
	lookups  uint64    // the kernel's references
	opens    int
}

func (n *node) linked(root *node) bool { return n == root || n.vparent != nil }

// relPath is the node's committed path relative to the backing root ("." for the root).
func (fs *unsyncFS) relPath(n *node) string {
	if n == fs.root {
		return "."
	}
	if n.cparent == nil {
		panic(fmt.Sprintf("node %d has no committed path", n.ino))
	}
	p := fs.relPath(n.cparent)
	if p == "." {
		return n.cname
	}
	return p + "/" + n.cname
}

func stagingName(n *node) string { return strconv.FormatUint(n.ino, 10) }

// obj opens the node's object if it is not open: at its committed path, or in staging.
func (fs *unsyncFS) openObject(n *node) error {
	if n.data.obj != nil {
		return nil
	}
	dirfd, name := fs.stagingFd, stagingName(n)
	if n.cparent != nil {
		dirfd, name = fs.rootFd, fs.relPath(n)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC|unix.O_NOFOLLOW, n.mode&0o7777)
	if err != nil {
		return err
	}
	n.data.obj = os.NewFile(uintptr(fd), name)
	return nil
}

// commit applies the first k pending operations to the backing tree.
func (fs *unsyncFS) commit(k int) error {
	for k > 0 {
		o := fs.pending[0]
		if err := fs.apply(o); err != nil {
			return fmt.Errorf("committing %v of %q: %w", o.kind, o.name, err)
		}
		fs.pending[0] = nil
		fs.pending = fs.pending[1:]
		k--
	}
	return nil
}

func (fs *unsyncFS) commitFor(dir *node) error {
	if fs.strict {
		if dir == nil {
			return nil
		}
		last := -1
		for i, o := range fs.pending {
			if o.touches(dir) {
				last = i
			}
		}
		return fs.commit(last + 1)
	}
	return fs.commit(len(fs.pending))
}

func (fs *unsyncFS) apply(o *nsOp) error {
	switch o.kind {
	case opCreate:
		// The object moves from staging to its name (an open descriptor follows it).
		path := fs.childPath(o.parent, o.name)
		if err := unix.Renameat(fs.stagingFd, stagingName(o.n), fs.rootFd, path); err == syscall.ENOENT {
			// Forgotten already (created and removed, both pending): the name exists, empty, until its unlink.
			fd, err := unix.Openat(fs.rootFd, path, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, o.n.mode&0o7777)
			if err != nil {
				return err
			}
			unix.Close(fd)
		} else if err != nil {
			return err
		}
		o.n.cparent, o.n.cname = o.parent, o.name
	case opMkdir:
		if err := unix.Mkdirat(fs.rootFd, fs.childPath(o.parent, o.name), o.n.mode&0o7777); err != nil {
			return err
		}
		o.n.cparent, o.n.cname = o.parent, o.name
	case opUnlink:
		if err := fs.release(o.n, fs.childPath(o.parent, o.name)); err != nil {
			return err
		}
	case opRmdir:
		if err := unix.Unlinkat(fs.rootFd, fs.childPath(o.parent, o.name), unix.AT_REMOVEDIR); err != nil {
			return err
		}
		o.n.cparent = nil
	case opRename:
		target := fs.childPath(o.parent2, o.name2)
		if r := o.replaced; r != nil {
			if r.dir {
				if err := unix.Unlinkat(fs.rootFd, target, unix.AT_REMOVEDIR); err != nil {
					return err
				}
				r.cparent = nil
			} else if err := fs.release(r, target); err != nil {
				return err
			}
		}
		if err := unix.Renameat(fs.rootFd, fs.childPath(o.parent, o.name), fs.rootFd, target); err != nil {
			return err
		}
		o.n.cparent, o.n.cname = o.parent2, o.name2
	}
	return nil
}

// release takes a file's durable name away: its object goes to staging while something still
// uses it, else it is deleted.
func (fs *unsyncFS) release(n *node, path string) error {
	if n.lookups > 0 || n.opens > 0 {
		if err := unix.Renameat(fs.rootFd, path, fs.stagingFd, stagingName(n)); err != nil {
			return err
		}
	} else {
		if err := unix.Unlinkat(fs.rootFd, path, 0); err != nil && err != syscall.ENOENT {
			return err
		}
		fs.closeObject(n)
	}
	n.cparent = nil
	return nil
}

func (fs *unsyncFS) childPath(dir *node, name string) string {
	p := fs.relPath(dir)
	if p == "." {
		return name
	}
	return p + "/" + name
}

func (fs *unsyncFS) closeObject(n *node) {
	if n.data != nil && n.data.obj != nil {
		n.data.obj.Close()
		n.data.obj = nil
	}
}

// maybeForget drops a node nobody can reach any more: not linked, no kernel reference, not open.
func (fs *unsyncFS) maybeForget(n *node) {
	if n == fs.root || n.vparent != nil || n.lookups > 0 || n.opens > 0 {
		return
	}
	delete(fs.nodes, n.ino)
	if n.dir {
		return
	}
	if n.cparent == nil { // never durable, or its name is gone: its object is staging garbage
		fs.closeObject(n)
		unix.Unlinkat(fs.stagingFd, stagingName(n), 0)
	}
	// else an unlink is pending: the object keeps its name until it commits (release deletes it).
}

func (k opKind) String() string {
	return [...]string{"create", "mkdir", "unlink", "rmdir", "rename"}[k]
}
