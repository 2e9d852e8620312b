package main

// The whole filesystem at once: building the view from the backing directory, syncing everything.

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

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
		n.vparent, n.vname, n.cparent, n.cname = dir, name, dir, name
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
