package main

// The FUSE operations on attributes, contents and directory listings.

import (
	"log"
	"sort"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

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
	if st := fs.injected(n, opRead, 0); st != fuse.OK {
		return nil, st
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
	if d := fs.delay(in.NodeId, opWrite); d > 0 {
		time.Sleep(d)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, st := fs.get(in.NodeId)
	if st != fuse.OK {
		return 0, st
	}
	grow := int64(in.Offset) + int64(len(data)) - n.data.size
	if grow < 0 {
		grow = 0
	}
	if st := fs.injected(n, opWrite, grow); st != fuse.OK {
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
	if d := fs.delay(in.NodeId, opFsync); d > 0 {
		time.Sleep(d)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.failed != nil {
		return fuse.EIO
	}
	n, st := fs.get(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if st := fs.injected(n, opFsync, 0); st != fuse.OK {
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
	if d := fs.delay(in.NodeId, opFsync); d > 0 {
		time.Sleep(d)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.failed != nil {
		return fuse.EIO
	}
	n, st := fs.dirNode(in.NodeId)
	if st != fuse.OK {
		return st
	}
	if st := fs.injected(n, opFsync, 0); st != fuse.OK {
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
