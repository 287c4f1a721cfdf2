package zones

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/openinof/inof/inof"
)

// A backup (Store.Backup) is a header, the store file's image and a
// checksum: the 8 bytes backupMagic, the image's size (uint64, big
// endian), the image, and the SHA-256 of the image. Backups written
// before the checksum was added are the bare image; VerifyBackup still
// takes them, checked by everything but the checksum.
const backupMagic = "INOFBAK1"

// backupHeaderSize and backupTrailerSize frame the image.
const (
	backupHeaderSize  = len(backupMagic) + 8
	backupTrailerSize = sha256.Size
)

// maxBackupImage bounds the store image VerifyBackup takes (a store holds
// configuration, far below this).
const maxBackupImage = 1 << 30

// ErrBadBackup wraps every reason VerifyBackup refuses a backup.
var ErrBadBackup = errors.New("not a usable backup")

// ErrFutureBackup reports a backup whose generation clock is ahead of now
// by more than inof.MaxGenerationSkew.
var ErrFutureBackup = errors.New("backup from the future")

// Backup writes a consistent copy of the whole store file (records,
// journal, clock) to w while the store stays in use, framed with a header
// and a SHA-256 of the image (see VerifyBackup), and returns the bytes
// written.
func (s *Store) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		size := tx.Size()
		hdr := make([]byte, backupHeaderSize)
		copy(hdr, backupMagic)
		binary.BigEndian.PutUint64(hdr[len(backupMagic):], uint64(size))
		k, err := w.Write(hdr)
		n += int64(k)
		if err != nil {
			return err
		}
		sum := sha256.New()
		m, err := tx.WriteTo(io.MultiWriter(w, sum))
		n += m
		if err != nil {
			return err
		}
		if m != size {
			return fmt.Errorf("wrote %d bytes of a %d-byte store", m, size)
		}
		k, err = w.Write(sum.Sum(nil))
		n += int64(k)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("zones: backup: %w", err)
	}
	return n, nil
}

// VerifyOptions configure VerifyBackup.
type VerifyOptions struct {
	// Now is the wall clock the backup's generations are held against
	// (time.Now if nil).
	Now func() time.Time
	// AcceptFutureClock takes a backup whose newest generation is more
	// than inof.MaxGenerationSkew ahead of Now.
	AcceptFutureClock bool
}

// BackupInfo describes a backup VerifyBackup accepted.
type BackupInfo struct {
	// Checksummed is false for a backup written before backups carried a
	// checksum.
	Checksummed bool
	// Size is the store image's size in bytes.
	Size int64
	// Newest is the highest generation in the backup (records, journal,
	// the store's clock); 0 for an empty store.
	Newest uint64
	// Records and Entries count the records and journal entries.
	Records, Entries int
}

// VerifyBackup reads a backup from src, checks it completely and leaves
// the store image in scratch (an empty file the caller created, and
// removes if this fails): the framing and the checksum (none for older
// backups), the bbolt file's layout (meta pages, every page reachable from
// the root inside the file, no page twice), bbolt's own consistency check,
// that every record and journal entry decodes, and that the newest
// generation is not ahead of now by more than inof.MaxGenerationSkew
// (unless opts.AcceptFutureClock). Every refusal wraps ErrBadBackup (or
// ErrFutureBackup) and is one line. A malformed backup makes it return an
// error, never panic or fault.
func VerifyBackup(src io.Reader, scratch *os.File, opts VerifyOptions) (BackupInfo, error) {
	var info BackupInfo
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	img, checksummed, err := readBackup(src)
	if err != nil {
		return info, err
	}
	info.Checksummed, info.Size = checksummed, int64(len(img))
	if err := checkLayout(img); err != nil {
		return info, fmt.Errorf("%w: %w", ErrBadBackup, err)
	}
	if _, err := scratch.WriteAt(img, 0); err != nil {
		return info, fmt.Errorf("zones: write %s: %w", scratch.Name(), err)
	}
	if err := scratch.Truncate(int64(len(img))); err != nil {
		return info, fmt.Errorf("zones: write %s: %w", scratch.Name(), err)
	}
	if err := scratch.Sync(); err != nil {
		return info, fmt.Errorf("zones: write %s: %w", scratch.Name(), err)
	}
	if err := checkImage(scratch.Name(), &info); err != nil {
		return info, err
	}
	if info.Newest != 0 && !opts.AcceptFutureClock {
		at := inof.GenerationTime(info.Newest)
		if ahead := at.Sub(now()); ahead > inof.MaxGenerationSkew {
			return info, fmt.Errorf("%w: its newest change is dated %s, %s ahead of this host's clock (limit %s); "+
				"restored, this reflector's changes would stay ahead of its peers', which refuse them",
				ErrFutureBackup, at.UTC().Format(time.RFC3339), ahead.Round(time.Second), inof.MaxGenerationSkew)
		}
	}
	return info, nil
}

// readBackup reads the whole backup and returns the store image, telling
// whether it came with a checksum (and checked it).
func readBackup(src io.Reader) ([]byte, bool, error) {
	br := bufio.NewReader(src)
	head, err := br.Peek(backupHeaderSize)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, fmt.Errorf("zones: read backup: %w", err)
	}
	if !bytes.HasPrefix(head, []byte(backupMagic)) {
		// An older backup: the bare store image.
		img, err := io.ReadAll(io.LimitReader(br, maxBackupImage+1))
		if err != nil {
			return nil, false, fmt.Errorf("zones: read backup: %w", err)
		}
		if len(img) > maxBackupImage {
			return nil, false, fmt.Errorf("%w: larger than %d bytes", ErrBadBackup, maxBackupImage)
		}
		if len(img) < boltPageHeader+4 || binary.LittleEndian.Uint32(img[boltPageHeader:]) != boltMagic {
			return nil, false, fmt.Errorf("%w: neither an inofctl backup nor a store file (%d bytes)", ErrBadBackup, len(img))
		}
		return img, false, nil
	}
	if len(head) < backupHeaderSize {
		return nil, true, fmt.Errorf("%w: truncated in its header", ErrBadBackup)
	}
	size := binary.BigEndian.Uint64(head[len(backupMagic):])
	if size > maxBackupImage {
		return nil, true, fmt.Errorf("%w: its header claims a %d-byte store, more than %d", ErrBadBackup, size, maxBackupImage)
	}
	if _, err := br.Discard(backupHeaderSize); err != nil {
		return nil, true, fmt.Errorf("zones: read backup: %w", err)
	}
	rest, err := io.ReadAll(io.LimitReader(br, int64(size)+backupTrailerSize+1))
	if err != nil {
		return nil, true, fmt.Errorf("zones: read backup: %w", err)
	}
	want := int(size) + backupTrailerSize
	switch {
	case len(rest) < want:
		return nil, true, fmt.Errorf("%w: truncated: %d of its %d bytes are there", ErrBadBackup,
			backupHeaderSize+len(rest), backupHeaderSize+want)
	case len(rest) > want:
		return nil, true, fmt.Errorf("%w: bytes after its end (a %d-byte store and its checksum)", ErrBadBackup, size)
	}
	img, sum := rest[:size], rest[size:]
	if got := sha256.Sum256(img); !bytes.Equal(got[:], sum) {
		return nil, true, fmt.Errorf("%w: checksum mismatch: the content changed since it was written", ErrBadBackup)
	}
	return img, true, nil
}

// bbolt's on-disk layout (go.etcd.io/bbolt, file format version 2), which
// checkLayout walks before bbolt maps the file: bbolt trusts the page ids
// and offsets it reads, and faults on a page past the end of the file.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltPageHeader   = 16 // id u64, flags u16, count u16, overflow u32
	boltElementSize  = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	boltBucketHeader = 16 // root pgid u64, sequence u64
	boltMetaSize     = 64 // magic, version, page size, flags u32; root bucket; freelist, pgid, txid, checksum u64
	boltNoFreelist   = ^uint64(0)
	boltMaxDepth     = 64

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	flagBucket   = 0x01
)

// boltMeta is a decoded meta page.
type boltMeta struct {
	pageSize             int
	root, freelist, pgid uint64
	txid                 uint64
}

// layout walks one store image.
type layout struct {
	img     []byte
	ps      int
	hwm     uint64
	visited map[uint64]bool
}

// checkLayout checks that img is a bbolt file whose every page reachable
// from its meta page lies within the image, is referenced once, and whose
// elements stay within their pages.
func checkLayout(img []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed store file (%v)", r)
		}
	}()
	m0, err0 := readMeta(img, 0)
	ps := 4096
	if err0 == nil {
		ps = m0.pageSize
	}
	m1, err1 := readMeta(img, ps)
	var m boltMeta
	switch {
	case err0 == nil && err1 == nil:
		m = m0
		if m1.txid > m0.txid && m1.pageSize == m0.pageSize {
			m = m1
		}
	case err0 == nil:
		m = m0
	case err1 == nil:
		m = m1
	default:
		return fmt.Errorf("not a store file: no valid meta page (%w)", err0)
	}
	ps = m.pageSize
	if len(img)%ps != 0 {
		return fmt.Errorf("store file of %d bytes, not a whole number of its %d-byte pages", len(img), ps)
	}
	if m.pgid < 4 || m.pgid > uint64(len(img)/ps) {
		return fmt.Errorf("truncated store file: it has %d pages, its meta page says %d", len(img)/ps, m.pgid)
	}
	if m.root < 2 || m.root >= m.pgid {
		return fmt.Errorf("root page %d outside the store's pages [2, %d)", m.root, m.pgid)
	}
	l := &layout{img: img, ps: ps, hwm: m.pgid, visited: map[uint64]bool{0: true, 1: true}}
	if m.freelist != boltNoFreelist {
		if err := l.freelist(m.freelist); err != nil {
			return err
		}
	}
	return l.tree(m.root, 0)
}

// readMeta decodes and validates the meta page at offset off.
func readMeta(img []byte, off int) (boltMeta, error) {
	if off < 0 || len(img) < off+boltPageHeader+boltMetaSize {
		return boltMeta{}, errors.New("file too short")
	}
	p := img[off : off+boltPageHeader+boltMetaSize]
	if binary.LittleEndian.Uint16(p[8:]) != flagMeta {
		return boltMeta{}, errors.New("meta page not marked as one")
	}
	b := p[boltPageHeader:]
	if binary.LittleEndian.Uint32(b[0:]) != boltMagic {
		return boltMeta{}, errors.New("bad magic")
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("file format version %d", v)
	}
	h := fnv.New64a()
	h.Write(b[:56])
	if h.Sum64() != binary.LittleEndian.Uint64(b[56:]) {
		return boltMeta{}, errors.New("meta page checksum mismatch")
	}
	m := boltMeta{
		pageSize: int(binary.LittleEndian.Uint32(b[8:])),
		root:     binary.LittleEndian.Uint64(b[16:]),
		freelist: binary.LittleEndian.Uint64(b[32:]),
		pgid:     binary.LittleEndian.Uint64(b[40:]),
		txid:     binary.LittleEndian.Uint64(b[48:]),
	}
	if m.pageSize < 512 || m.pageSize > 1<<16 || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("page size %d", m.pageSize)
	}
	return m, nil
}

// page returns the bytes of page id (with its overflow pages) after
// checking that it is inside the file and referenced for the first time.
func (l *layout) page(id uint64, what string) ([]byte, error) {
	if id < 2 || id >= l.hwm {
		return nil, fmt.Errorf("%s page %d outside the store's pages [2, %d)", what, id, l.hwm)
	}
	if l.visited[id] {
		return nil, fmt.Errorf("page %d referenced twice", id)
	}
	h := l.img[id*uint64(l.ps):]
	if got := binary.LittleEndian.Uint64(h); got != id {
		return nil, fmt.Errorf("page %d holds page id %d", id, got)
	}
	span := uint64(binary.LittleEndian.Uint32(h[12:])) + 1
	if span > l.hwm-id {
		return nil, fmt.Errorf("page %d overflows past the store's %d pages", id, l.hwm)
	}
	for i := range span {
		if l.visited[id+i] {
			return nil, fmt.Errorf("page %d referenced twice", id+i)
		}
		l.visited[id+i] = true
	}
	return h[:span*uint64(l.ps)], nil
}

// freelist checks the freelist page: its ids are pages of the file.
func (l *layout) freelist(id uint64) error {
	p, err := l.page(id, "freelist")
	if err != nil {
		return err
	}
	if binary.LittleEndian.Uint16(p[8:]) != flagFreelist {
		return fmt.Errorf("freelist page %d not marked as one", id)
	}
	n, ids := uint64(binary.LittleEndian.Uint16(p[10:])), p[boltPageHeader:]
	if n == 0xFFFF {
		if len(ids) < 8 {
			return fmt.Errorf("freelist page %d too short", id)
		}
		n, ids = binary.LittleEndian.Uint64(ids), ids[8:]
	}
	if n > uint64(len(ids)/8) {
		return fmt.Errorf("freelist page %d lists %d pages, room for %d", id, n, len(ids)/8)
	}
	for i := range n {
		if f := binary.LittleEndian.Uint64(ids[i*8:]); f < 2 || f >= l.hwm {
			return fmt.Errorf("freelist page %d frees page %d outside [2, %d)", id, f, l.hwm)
		}
	}
	return nil
}

// tree checks the page tree rooted at page id.
func (l *layout) tree(id uint64, depth int) error {
	if depth > boltMaxDepth {
		return fmt.Errorf("page tree deeper than %d", boltMaxDepth)
	}
	p, err := l.page(id, "tree")
	if err != nil {
		return err
	}
	switch binary.LittleEndian.Uint16(p[8:]) {
	case flagBranch:
		n := int(binary.LittleEndian.Uint16(p[10:]))
		if n == 0 || boltPageHeader+n*boltElementSize > len(p) {
			return fmt.Errorf("branch page %d with %d elements", id, n)
		}
		for i := range n {
			at := boltPageHeader + i*boltElementSize
			e := p[at:]
			pos, ksize := uint64(binary.LittleEndian.Uint32(e)), uint64(binary.LittleEndian.Uint32(e[4:]))
			if uint64(at)+pos+ksize > uint64(len(p)) {
				return fmt.Errorf("branch page %d: element %d past the page", id, i)
			}
			if err := l.tree(binary.LittleEndian.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
		}
		return nil
	case flagLeaf:
		return l.leaf(p, id, depth)
	default:
		return fmt.Errorf("page %d of type %#x in the tree", id, binary.LittleEndian.Uint16(p[8:]))
	}
}

// leaf checks a leaf page (a page of the file or an inline bucket's) and
// the buckets it holds.
func (l *layout) leaf(p []byte, id uint64, depth int) error {
	if len(p) < boltPageHeader || binary.LittleEndian.Uint16(p[8:]) != flagLeaf {
		return fmt.Errorf("page %d: inline bucket without a leaf page", id)
	}
	n := int(binary.LittleEndian.Uint16(p[10:]))
	if boltPageHeader+n*boltElementSize > len(p) {
		return fmt.Errorf("leaf page %d with %d elements", id, n)
	}
	for i := range n {
		at := boltPageHeader + i*boltElementSize
		e := p[at:]
		flags := binary.LittleEndian.Uint32(e)
		pos, ksize, vsize := uint64(binary.LittleEndian.Uint32(e[4:])), uint64(binary.LittleEndian.Uint32(e[8:])), uint64(binary.LittleEndian.Uint32(e[12:]))
		start := uint64(at) + pos + ksize
		if start+vsize > uint64(len(p)) {
			return fmt.Errorf("leaf page %d: element %d past the page", id, i)
		}
		if flags&flagBucket == 0 {
			continue
		}
		v := p[start : start+vsize]
		if len(v) < boltBucketHeader {
			return fmt.Errorf("leaf page %d: bucket %d with a short header", id, i)
		}
		if root := binary.LittleEndian.Uint64(v); root != 0 {
			if err := l.tree(root, depth+1); err != nil {
				return err
			}
			continue
		}
		if depth+1 > boltMaxDepth {
			return fmt.Errorf("page tree deeper than %d", boltMaxDepth)
		}
		if err := l.leaf(v[boltBucketHeader:], id, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// checkImage opens the store image at path read-only and runs bbolt's
// consistency check, then decodes every record and journal entry into
// info. A fault or panic in bbolt becomes an error.
func checkImage(path string, info *BackupInfo) (err error) {
	var file *os.File
	done := make(chan struct{})
	go func() {
		defer close(done)
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				if file != nil {
					file.Close()
				}
				err = fmt.Errorf("%w: the store file is damaged (%v)", ErrBadBackup, r)
			}
		}()
		err = checkImageUnsafe(path, info, func(f *os.File) { file = f })
	}()
	<-done
	return err
}

// checkImageUnsafe is checkImage's work, which may panic or fault on a
// damaged file.
func checkImageUnsafe(path string, info *BackupInfo, opened func(*os.File)) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: time.Second,
		OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, mode)
			if err == nil {
				opened(f)
			}
			return f, err
		}})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadBackup, err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		var errs []error
		for e := range tx.Check() {
			errs = append(errs, e)
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w: the store file is inconsistent: %w (and %d more)", ErrBadBackup, errs[0], len(errs)-1)
		}
		for _, name := range [][]byte{bucketRecords, bucketMeta, bucketJournal} {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("%w: a store file without its %s bucket", ErrBadBackup, name)
			}
		}
		if v := tx.Bucket(bucketMeta).Get(keyClock); len(v) == 8 {
			info.Newest = max(info.Newest, binary.BigEndian.Uint64(v))
		}
		if err := tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
			var r Record
			if err := r.UnmarshalBinary(v); err != nil {
				return fmt.Errorf("%w: record %q: %w", ErrBadBackup, k, err)
			}
			info.Records++
			info.Newest = max(info.Newest, r.Gen)
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bucketJournal).ForEach(func(k, v []byte) error {
			ver, ok := parseEntryKey(k)
			if !ok {
				return fmt.Errorf("%w: journal key %x", ErrBadBackup, k)
			}
			var e Entry
			if err := e.UnmarshalBinary(v); err != nil {
				return fmt.Errorf("%w: journal entry %s: %w", ErrBadBackup, EntryID(ver), err)
			}
			info.Entries++
			info.Newest = max(info.Newest, ver.Gen)
			return nil
		})
	})
}
