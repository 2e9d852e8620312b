package main

// The FUSE operations. One lock guards everything: the view, the pending log, the
// chunks and the objects (two cores, and a broker's writes are batches).

import (
	"log"
	"os"
	"sort"
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
	n.vparent = dir
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
	n.vparent = to
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

// -- attributes -------------------------------------------------------------------

func (fs *unsyncFS) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.get(in.NodeId)
	if st != fuse.OK {
		return st
	}
	out.SetTimeout(cacheTimeout)
	fs.fillAttr(n, &out.Attr)
	return fuse.OK
}

func (fs *unsyncFS) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.get(in.NodeId)
	if st != fuse.OK {
		return st
	}
	t := now()
	if in.Valid&fuse.FATTR_SIZE != 0 {
		if n.dir {
			return fuse.Status(syscall.EISDIR)
		}
		n.data.truncate(int64(in.Size))
		n.mtime = t
	}
	if in.Valid&fuse.FATTR_MODE != 0 {
		n.mode = (n.mode &^ 0o7777) | (in.Mode & 0o7777)
	}
	if in.Valid&fuse.FATTR_UID != 0 {
		n.uid = in.Uid
	}
	if in.Valid&fuse.FATTR_GID != 0 {
		n.gid = in.Gid
	}
	if in.Valid&fuse.FATTR_ATIME != 0 {
		n.atime = int64(in.Atime)*1e9 + int64(in.Atimensec)
	}
	if in.Valid&fuse.FATTR_MTIME != 0 {
		n.mtime = int64(in.Mtime)*1e9 + int64(in.Mtimensec)
	}
	if in.Valid&(1<<7) != 0 { // FATTR_ATIME_NOW
		n.atime = t
	}
	if in.Valid&(1<<8) != 0 { // FATTR_MTIME_NOW
		n.mtime = t
	}
	n.ctime = t
	out.SetTimeout(cacheTimeout)
	fs.fillAttr(n, &out.Attr)
	return fuse.OK
}

func (fs *unsyncFS) Access(_ <-chan struct{}, _ *fuse.AccessIn) fuse.Status { return fuse.OK }

func (fs *unsyncFS) StatFs(_ <-chan struct{}, _ *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	var s unix.Statfs_t
	if err := unix.Fstatfs(fs.rootFd, &s); err != nil {
		return errno(err)
	}
	out.Blocks, out.Bfree, out.Bavail = s.Blocks, s.Bfree, s.Bavail
	out.Files, out.Ffree = s.Files, s.Ffree
	out.Bsize, out.Frsize, out.NameLen = uint32(s.Bsize), uint32(s.Frsize), uint32(s.Namelen)
	return fuse.OK
}

// -- contents ---------------------------------------------------------------------

func (fs *unsyncFS) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.get(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if n.dir {
		return fuse.Status(syscall.EISDIR)
	}
	n.opens++
	if in.Flags&syscall.O_TRUNC != 0 {
		n.data.truncate(0)
	}
	out.OpenFlags = fuse.FOPEN_KEEP_CACHE
	return fuse.OK
}

func (fs *unsyncFS) Release(_ <-chan struct{}, in *fuse.ReleaseIn) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if n, ok := fs.nodes[in.NodeId]; ok && n.opens > 0 {
		n.opens--
		fs.maybeForget(n)
	}
}

func (fs *unsyncFS) Flush(_ <-chan struct{}, _ *fuse.FlushIn) fuse.Status { return fuse.OK }

func (fs *unsyncFS) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.get(in.NodeId)
	if st != fuse.OK {
		return nil, st
	}
	if n.dir {
		return nil, fuse.Status(syscall.EISDIR)
	}
	if err := fs.openObject(n); err != nil {
		return nil, errno(err)
	}
	if int(in.Size) < len(buf) {
		buf = buf[:in.Size]
	}
	got, err := n.data.read(buf, int64(in.Offset))
	if err != nil {
		return nil, errno(err)
	}
	return fuse.ReadResultData(buf[:got]), fuse.OK
}

func (fs *unsyncFS) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.get(in.NodeId)
	if st != fuse.OK {
		return 0, st
	}
	if err := fs.openObject(n); err != nil {
		return 0, errno(err)
	}
	if err := n.data.write(data, int64(in.Offset)); err != nil {
		return 0, errno(err)
	}
	n.mtime = now()
	return uint32(len(data)), fuse.OK
}

func (fs *unsyncFS) Fallocate(_ <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.get(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if in.Mode&^uint32(unix.FALLOC_FL_KEEP_SIZE) != 0 {
		return fuse.Status(syscall.EOPNOTSUPP)
	}
	if end := int64(in.Offset + in.Length); in.Mode == 0 && end > n.data.size {
		n.data.truncate(end)
	}
	return fuse.OK
}

// Fsync: the file's contents become durable (and names, as the mode says).
func (fs *unsyncFS) Fsync(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.failed != nil {
		return fuse.EIO
	}
	n, st := fs.get(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if !n.dir {
		if err := fs.openObject(n); err != nil {
			return errno(err)
		}
		if err := n.data.sync(); err != nil {
			return errno(err)
		}
		return fs.commitStatus(fs.commitFor(nil))
	}
	return fs.commitStatus(fs.commitFor(n))
}

func (fs *unsyncFS) FsyncDir(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.failed != nil {
		return fuse.EIO
	}
	n, st := fs.dirNode(in.NodeId)
	if st != fuse.OK {
		return st
	}
	return fs.commitStatus(fs.commitFor(n))
}

func (fs *unsyncFS) commitStatus(err error) fuse.Status {
	if err != nil {
		fs.failed = err
		log.Printf("error: %v", err)
		return fuse.EIO
	}
	return fuse.OK
}

// -- directories --------------------------------------------------------------------

func (fs *unsyncFS) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, st := fs.dirNode(in.NodeId)
	return st
}

func (fs *unsyncFS) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, st := fs.dirNode(in.NodeId)
	if st != fuse.OK {
		return st
	}
	names := make([]string, 0, len(dir.children))
	for name := range dir.children {
		names = append(names, name)
	}
	sort.Strings(names)
	entries := append([]fuse.DirEntry{{Name: ".", Mode: syscall.S_IFDIR, Ino: dir.ino}, {Name: "..", Mode: syscall.S_IFDIR}},
		make([]fuse.DirEntry, 0, len(names))...)
	for _, name := range names {
		c := dir.children[name]
		entries = append(entries, fuse.DirEntry{Name: name, Mode: c.mode, Ino: c.ino})
	}
	for i := int(in.Offset); i < len(entries); i++ {
		e := entries[i]
		e.Off = uint64(i + 1)
		if !out.AddDirEntry(e) {
			break
		}
	}
	return fuse.OK
}

func (fs *unsyncFS) ReleaseDir(_ *fuse.ReleaseIn) {}

// -- the whole filesystem ---------------------------------------------------------------

// syncAll makes everything durable: every file's contents and every pending name.
func (fs *unsyncFS) syncAll() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, n := range fs.nodes {
		if n.dir || !n.data.dirty {
			continue
		}
		if err := fs.openObject(n); err != nil {
			return err
		}
		if err := n.data.sync(); err != nil {
			return err
		}
	}
	if err := fs.commit(len(fs.pending)); err != nil {
		return err
	}
	return nil
}

// load builds the view from the backing tree: everything there is durable.
func (fs *unsyncFS) load(dir *node, rel string) error {
	fd, err := unix.Openat(fs.rootFd, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	ents, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, name := range ents {
		childRel := name
		if rel != "." {
			childRel = rel + "/" + name
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fs.rootFd, childRel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		isDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
		if !isDir && st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue // files and directories only
		}
		n := fs.newNode(isDir, st.Mode, st.Uid, st.Gid)
		n.mtime = st.Mtim.Nano()
		n.ctime = st.Ctim.Nano()
		n.atime = st.Atim.Nano()
		n.vparent, n.cparent, n.cname = dir, dir, name
		dir.children[name] = n
		if isDir {
			if err := fs.load(n, childRel); err != nil {
				return err
			}
		} else {
			n.data.size, n.data.valid, n.data.osize = st.Size, st.Size, st.Size
		}
	}
	return nil
}

func (fs *unsyncFS) unsynced() (files int, bytes int64, names int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, n := range fs.nodes {
		if !n.dir && n.data.dirty {
			files++
			bytes += n.data.unsyncedBytes()
		}
	}
	return files, bytes, len(fs.pending)
}
