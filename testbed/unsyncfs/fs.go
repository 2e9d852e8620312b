package main

// The FUSE operations. One lock guards everything: the view, the pending log, the
// chunks and the objects (two cores, and a broker's writes are batches).

import (
	"log"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

const cacheTimeout = 10 * time.Second // only this mount changes these files: the kernel may cache long

type unsyncFS struct {
	fuse.RawFileSystem
	mu        sync.Mutex
	strict    bool
	rootFd    int // the backing directory, opened before the mount covered it
	stagingFd int // objects of files whose name is not durable
	root      *node
	nodes     map[uint64]*node
	nextIno   uint64
	pending   []*nsOp
	failed    error // a commit that failed: every later fsync fails (as a disk would)
	faults    diskFaults
}

func now() int64 { return time.Now().UnixNano() }

func (fs *unsyncFS) String() string { return "unsyncfs" }

func (fs *unsyncFS) newNode(dir bool, mode, uid, gid uint32) *node {
	t := now()
	n := &node{ino: fs.nextIno, dir: dir, mode: mode, uid: uid, gid: gid, atime: t, mtime: t, ctime: t}
	fs.nextIno++
	if dir {
		n.children = map[string]*node{}
	} else {
		n.data = &fileData{chunks: map[int64][]byte{}}
	}
	fs.nodes[n.ino] = n
	return n
}

func (fs *unsyncFS) fillAttr(n *node, a *fuse.Attr) {
	a.Ino = n.ino
	a.Mode = n.mode
	a.Uid, a.Gid = n.uid, n.gid
	a.Nlink = 1
	if n.dir {
		a.Nlink = 2
		a.Size = 4096
	} else {
		a.Size = uint64(n.data.size)
		a.Blocks = (a.Size + 511) / 512
	}
	a.Blksize = 4096
	a.Atime, a.Atimensec = uint64(n.atime/1e9), uint32(n.atime%1e9)
	a.Mtime, a.Mtimensec = uint64(n.mtime/1e9), uint32(n.mtime%1e9)
	a.Ctime, a.Ctimensec = uint64(n.ctime/1e9), uint32(n.ctime%1e9)
}

func (fs *unsyncFS) entry(n *node, out *fuse.EntryOut) {
	n.lookups++
	out.NodeId = n.ino
	out.Generation = 1
	out.SetEntryTimeout(cacheTimeout)
	out.SetAttrTimeout(cacheTimeout)
	fs.fillAttr(n, &out.Attr)
}

func (fs *unsyncFS) get(ino uint64) (*node, fuse.Status) {
	n, ok := fs.nodes[ino]
	if !ok {
		return nil, fuse.ENOENT
	}
	return n, fuse.OK
}

func (fs *unsyncFS) dirNode(ino uint64) (*node, fuse.Status) {
	n, st := fs.get(ino)
	if st != fuse.OK {
		return nil, st
	}
	if !n.dir {
		return nil, fuse.ENOTDIR
	}
	return n, fuse.OK
}

func errno(err error) fuse.Status {
	if err == nil {
		return fuse.OK
	}
	log.Printf("error: %v", err)
	return fuse.ToStatus(err)
}

// -- names ----------------------------------------------------------------------

func (fs *unsyncFS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, st := fs.dirNode(h.NodeId)
	if st != fuse.OK {
		return st
	}
	n, ok := dir.children[name]
	if !ok {
		return fuse.ENOENT
	}
	fs.entry(n, out)
	return fuse.OK
}

func (fs *unsyncFS) Forget(ino, nlookup uint64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, ok := fs.nodes[ino]
	if !ok {
		return
	}
	if nlookup > n.lookups {
		nlookup = n.lookups
	}
	n.lookups -= nlookup
	fs.maybeForget(n)
}

func (fs *unsyncFS) link(dir *node, name string, n *node, kind opKind) {
	dir.children[name] = n
	n.vparent, n.vname = dir, name
	dir.mtime, dir.ctime = now(), now()
	fs.pending = append(fs.pending, &nsOp{kind: kind, parent: dir, name: name, n: n})
}

func (fs *unsyncFS) newFile(h *fuse.InHeader, name string, mode uint32) (*node, fuse.Status) {
	dir, st := fs.dirNode(h.NodeId)
	if st != fuse.OK {
		return nil, st
	}
	if _, exists := dir.children[name]; exists {
		return nil, fuse.Status(syscall.EEXIST)
	}
	if mode&syscall.S_IFMT != syscall.S_IFREG && mode&syscall.S_IFMT != 0 {
		return nil, fuse.EPERM // files and directories only
	}
	n := fs.newNode(false, syscall.S_IFREG|(mode&0o7777), h.Uid, h.Gid)
	if err := fs.openObject(n); err != nil { // its object, in staging until the name is durable
		delete(fs.nodes, n.ino)
		return nil, errno(err)
	}
	fs.link(dir, name, n, opCreate)
	return n, fuse.OK
}

func (fs *unsyncFS) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.newFile(&in.InHeader, name, in.Mode)
	if st != fuse.OK {
		return st
	}
	n.opens++
	fs.entry(n, &out.EntryOut)
	out.OpenFlags = fuse.FOPEN_KEEP_CACHE
	return fuse.OK
}

func (fs *unsyncFS) Mknod(_ <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.newFile(&in.InHeader, name, in.Mode)
	if st != fuse.OK {
		return st
	}
	fs.entry(n, out)
	return fuse.OK
}

func (fs *unsyncFS) Mkdir(_ <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, st := fs.dirNode(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if _, exists := dir.children[name]; exists {
		return fuse.Status(syscall.EEXIST)
	}
	n := fs.newNode(true, syscall.S_IFDIR|(in.Mode&0o7777), in.Uid, in.Gid)
	fs.link(dir, name, n, opMkdir)
	fs.entry(n, out)
	return fuse.OK
}

func (fs *unsyncFS) unlink(h *fuse.InHeader, name string, wantDir bool) fuse.Status {
	dir, st := fs.dirNode(h.NodeId)
	if st != fuse.OK {
		return st
	}
	n, ok := dir.children[name]
	if !ok {
		return fuse.ENOENT
	}
	if n.dir != wantDir {
		if wantDir {
			return fuse.ENOTDIR
		}
		return fuse.Status(syscall.EISDIR)
	}
	if n.dir && len(n.children) > 0 {
		return fuse.Status(syscall.ENOTEMPTY)
	}
	kind := opUnlink
	if n.dir {
		kind = opRmdir
	}
	delete(dir.children, name)
	n.vparent = nil
	dir.mtime, dir.ctime, n.ctime = now(), now(), now()
	fs.pending = append(fs.pending, &nsOp{kind: kind, parent: dir, name: name, n: n})
	fs.maybeForget(n)
	return fuse.OK
}

func (fs *unsyncFS) Unlink(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.unlink(h, name, false)
}

func (fs *unsyncFS) Rmdir(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.unlink(h, name, true)
}

func (fs *unsyncFS) Rename(_ <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	from, st := fs.dirNode(in.NodeId)
	if st != fuse.OK {
		return st
	}
	to, st := fs.dirNode(in.Newdir)
	if st != fuse.OK {
		return st
	}
	if in.Flags&^uint32(unix.RENAME_NOREPLACE) != 0 {
		return fuse.EINVAL // RENAME_EXCHANGE and whiteouts: not for Kafka or ZooKeeper
	}
	n, ok := from.children[oldName]
	if !ok {
		return fuse.ENOENT
	}
	old, exists := to.children[newName]
	if exists && old == n {
		return fuse.OK
	}
	if exists {
		if in.Flags&unix.RENAME_NOREPLACE != 0 {
			return fuse.Status(syscall.EEXIST)
		}
		if old.dir && !n.dir {
			return fuse.Status(syscall.EISDIR)
		}
		if !old.dir && n.dir {
			return fuse.ENOTDIR
		}
		if old.dir && len(old.children) > 0 {
			return fuse.Status(syscall.ENOTEMPTY)
		}
	}
	if n.dir {
		for p := to; p != nil; p = p.vparent {
			if p == n {
				return fuse.EINVAL // into its own subtree
			}
		}
	}
	op := &nsOp{kind: opRename, parent: from, name: oldName, parent2: to, name2: newName, n: n}
	delete(from.children, oldName)
	if exists {
		op.replaced = old
		old.vparent = nil
	}
	to.children[newName] = n
	n.vparent, n.vname = to, newName
	t := now()
	from.mtime, from.ctime, to.mtime, to.ctime, n.ctime = t, t, t, t, t
	fs.pending = append(fs.pending, op)
	if exists {
		fs.maybeForget(old)
	}
	return fuse.OK
}

func (fs *unsyncFS) Link(_ <-chan struct{}, _ *fuse.LinkIn, _ string, _ *fuse.EntryOut) fuse.Status {
	return fuse.EPERM
}

func (fs *unsyncFS) Symlink(_ <-chan struct{}, _ *fuse.InHeader, _ string, _ string, _ *fuse.EntryOut) fuse.Status {
	return fuse.EPERM
}
