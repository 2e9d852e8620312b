// unsyncfs: a FUSE filesystem that loses unsynced writes, as a power cut would.
//
// It mounts over a directory (the backing directory, opened before it is covered) and
// passes every operation through to an in-memory view of it. Written data stays in
// memory until its file is fsynced (or msynced); names created, removed or renamed stay
// in memory until an fsync commits them (see namespace.go for the two modes). The
// backing directory holds exactly what is durable at every moment, so a power cut is
// this process dying: SIGKILL it (or send SIGUSR2, which also unmounts) and whatever
// was not synced is gone; mounting again shows what survived.
//
// Signals: SIGTERM or SIGINT: sync everything, unmount, exit 0 (a clean shutdown).
// SIGUSR1: sync everything and stay mounted. SIGHUP: read the disk faults' control file (faults.go). SIGUSR2: a power cut: unmount at once
// without syncing, exit 0. SIGKILL: a power cut (the mount is left dead: unmount it).
//
// Must never: write to the backing directory anything its users did not sync, or touch
// a path outside the backing and staging directories.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

func main() {
	backing := flag.String("backing", "", "the directory to mount over (it holds what is durable)")
	staging := flag.String("staging", "", "where objects of not-yet-durable names live (default: .NAME.unsynced beside the backing directory)")
	name := flag.String("name", "unsyncfs", "the mount's source name, as /proc/mounts shows it")
	mode := flag.String("mode", "journal", "journal: any fsync makes pending names durable; strict: only a directory's fsync does")
	debug := flag.Bool("debug", false, "log every FUSE request")
	control := flag.String("faults", "", "the disk faults' control file, read at every SIGHUP (faults.go)")
	status := flag.String("status", "", "where the disk faults' counts and the control generation applied are written")
	flag.Parse()
	// Before the mount appears: a signal that comes once it is there must find its handler.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGHUP)
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if *backing == "" || (*mode != "journal" && *mode != "strict") {
		fmt.Fprintln(os.Stderr, "usage: unsyncfs -backing DIR [-staging DIR] [-name NAME] [-mode journal|strict] [-faults FILE -status FILE]")
		os.Exit(2)
	}
	dir, err := filepath.Abs(*backing)
	check(err)
	if *staging == "" {
		*staging = filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".unsynced")
	}
	fs := &unsyncFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), strict: *mode == "strict",
		nodes: map[uint64]*node{}, nextIno: fuse.FUSE_ROOT_ID}
	fs.rootFd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	check(err)
	// Objects left in staging by a power cut belonged to names that never became durable.
	check(os.RemoveAll(*staging))
	check(os.MkdirAll(*staging, 0o700))
	fs.stagingFd, err = unix.Open(*staging, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	check(err)
	var st unix.Stat_t
	check(unix.Fstat(fs.rootFd, &st))
	fs.root = fs.newNode(true, st.Mode, st.Uid, st.Gid)
	check(fs.load(fs.root, "."))
	fs.initFaults(*control, *status)

	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &rl)
	}
	opts := &fuse.MountOptions{
		AllowOther: true, DirectMountStrict: true, FsName: *name, Name: "unsyncfs",
		MaxWrite: 1 << 20, MaxBackground: 64, DisableXAttrs: true, DisableReadDirPlus: true, Debug: *debug,
		// Every change comes through this mount: the kernel's page cache is never stale, so it need not drop it
		// whenever an mtime moves (a broker's followers read what was just appended).
		ExplicitDataCacheControl: true,
	}
	server, err := fuse.NewServer(fs, dir, opts)
	check(err)
	go server.Serve()
	check(server.WaitMount())
	log.Printf("mounted %s over %s (%s mode, staging %s)", *name, dir, *mode, *staging)
	fmt.Println("mounted")

	for sig := range signals {
		switch sig {
		case syscall.SIGHUP:
			fs.loadFaults()
			fs.writeStatus()
		case syscall.SIGUSR1:
			report(fs, "sync all")
			if err := fs.syncAll(); err != nil {
				log.Printf("error: sync all: %v", err)
			}
		case syscall.SIGUSR2:
			report(fs, "power cut: dropping")
			_ = unix.Unmount(dir, unix.MNT_DETACH)
			os.Exit(0)
		default:
			report(fs, "shutdown: syncing")
			code := 0
			if err := fs.syncAll(); err != nil {
				log.Printf("error: sync all: %v", err)
				code = 1
			}
			unmount(server, dir)
			if err := fs.syncAll(); err != nil { // what the kernel wrote back while unmounting
				log.Printf("error: sync all: %v", err)
				code = 1
			}
			log.Printf("unmounted %s", dir)
			os.Exit(code)
		}
	}
}

// unmount detaches the mount; users that still hold it (lazily) get errors once this process exits.
func unmount(server *fuse.Server, dir string) {
	done := make(chan error, 1)
	go func() { done <- server.Unmount() }()
	select {
	case err := <-done:
		if err == nil {
			return
		}
		log.Printf("unmount: %v; detaching", err)
	case <-time.After(5 * time.Second):
		log.Printf("unmount: still busy after 5 s; detaching")
	}
	_ = unix.Unmount(dir, unix.MNT_DETACH)
}

func report(fs *unsyncFS, what string) {
	files, bytes, names := fs.unsynced()
	log.Printf("%s: %d files with unsynced data (%d bytes in chunks), %d pending names", what, files, bytes, names)
}

func check(err error) {
	if err != nil {
		log.Fatalf("unsyncfs: %v", err)
	}
}
