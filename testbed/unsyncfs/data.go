package main

// A file's contents: what was fsynced lives in its object (a file under the backing
// directory, or in the staging directory while its name is not yet durable); what was
// written since lives in memory, in chunks, until the file is fsynced.

import (
	"os"

	"golang.org/x/sys/unix"
)

const chunkSize = 64 << 10

type fileData struct {
	obj    *os.File         // the object: the synced contents (opened when first needed)
	osize  int64            // the object's size
	valid  int64            // bytes of the object that are still the file's (a truncation lowers it)
	size   int64            // the file's size as its users see it
	chunks map[int64][]byte // unsynced contents by chunk index; bytes past `size` are zero
	dirty  bool             // size or contents differ from the object
}

// readObject fills buf with the synced bytes at off, zeros past `valid`.
func (d *fileData) readObject(buf []byte, off int64) error {
	n := 0
	if off < d.valid {
		want := len(buf)
		if int64(want) > d.valid-off {
			want = int(d.valid - off)
		}
		for n < want {
			m, err := unix.Pread(int(d.obj.Fd()), buf[n:want], off+int64(n))
			if err != nil {
				return err
			}
			if m == 0 {
				break
			}
			n += m
		}
	}
	for i := n; i < len(buf); i++ {
		buf[i] = 0
	}
	return nil
}

func (d *fileData) chunk(idx int64, whole bool) ([]byte, error) {
	c, ok := d.chunks[idx]
	if ok {
		return c, nil
	}
	c = make([]byte, chunkSize)
	if !whole && idx*chunkSize < d.valid {
		if err := d.readObject(c, idx*chunkSize); err != nil {
			return nil, err
		}
	}
	d.chunks[idx] = c
	return c, nil
}

func (d *fileData) write(data []byte, off int64) error {
	end := off + int64(len(data))
	for pos := off; pos < end; {
		idx := pos / chunkSize
		start := pos - idx*chunkSize
		n := int64(chunkSize) - start
		if n > end-pos {
			n = end - pos
		}
		c, err := d.chunk(idx, start == 0 && n == chunkSize)
		if err != nil {
			return err
		}
		copy(c[start:start+n], data[pos-off:pos-off+n])
		pos += n
	}
	if end > d.size {
		d.size = end
	}
	d.dirty = true
	return nil
}

func (d *fileData) read(buf []byte, off int64) (int, error) {
	if off >= d.size {
		return 0, nil
	}
	if int64(len(buf)) > d.size-off {
		buf = buf[:d.size-off]
	}
	for pos := int64(0); pos < int64(len(buf)); {
		at := off + pos
		idx := at / chunkSize
		start := at - idx*chunkSize
		n := int64(chunkSize) - start
		if n > int64(len(buf))-pos {
			n = int64(len(buf)) - pos
		}
		if c, ok := d.chunks[idx]; ok {
			copy(buf[pos:pos+n], c[start:start+n])
		} else if err := d.readObject(buf[pos:pos+n], at); err != nil {
			return 0, err
		}
		pos += n
	}
	return len(buf), nil
}

func (d *fileData) truncate(size int64) {
	if size < d.size {
		for idx, c := range d.chunks {
			cstart := idx * chunkSize
			if cstart >= size {
				delete(d.chunks, idx)
			} else if cstart+chunkSize > size {
				for i := size - cstart; i < chunkSize; i++ {
					c[i] = 0
				}
			}
		}
		if size < d.valid {
			d.valid = size
		}
	}
	d.size = size
	d.dirty = true
}

// sync makes the object hold exactly the file's contents; memory holds nothing unsynced after it.
func (d *fileData) sync() error {
	if !d.dirty {
		return nil
	}
	fd := int(d.obj.Fd())
	if d.valid < d.osize {
		if err := unix.Ftruncate(fd, d.valid); err != nil {
			return err
		}
		d.osize = d.valid
	}
	if d.osize != d.size {
		if err := unix.Ftruncate(fd, d.size); err != nil {
			return err
		}
		d.osize = d.size
	}
	for idx, c := range d.chunks {
		cstart := idx * chunkSize
		n := int64(chunkSize)
		if cstart+n > d.size {
			n = d.size - cstart
		}
		if n > 0 {
			if _, err := unix.Pwrite(fd, c[:n], cstart); err != nil {
				return err
			}
		}
	}
	d.chunks = map[int64][]byte{}
	d.valid = d.size
	d.dirty = false
	return nil
}

func (d *fileData) unsyncedBytes() int64 {
	return int64(len(d.chunks)) * chunkSize
}
