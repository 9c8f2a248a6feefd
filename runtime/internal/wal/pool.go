package wal

import "sync"

// fdPool keeps at most max logs holding an open descriptor, so that a
// server with more sessions than its file limit allows still runs: the
// least recently written log is closed and reopens on its next write.
// With no max it still tracks every open log, so that running out of
// descriptors anyway (sockets share the limit) can shed some.
type fdPool struct {
	mu   sync.Mutex
	max  int
	n    int
	head *Log // most recently used
	tail *Log
}

func newPool(max int) *fdPool { return &fdPool{max: max} }

// add registers l, which has just opened its file (l.mu is held).
func (p *fdPool) add(l *Log) {
	p.mu.Lock()
	if !l.inPool {
		l.inPool = true
		p.n++
		p.pushFront(l)
	}
	var victims []*Log
	if p.max > 0 {
		victims = p.evictLocked(l, p.max)
	}
	p.mu.Unlock()
	p.close(victims)
}

// shed closes up to n idle logs other than keep, whatever the limit: the
// process ran out of descriptors (sockets count too), so make room. A
// victim busy writing is passed over for the next least recently used, so
// a few busy logs at the cold end do not stop it.
func (p *fdPool) shed(keep *Log, n int) {
	for tries := 0; n > 0 && tries < 4; tries++ {
		p.mu.Lock()
		victims := p.evictLocked(keep, max(0, p.n-n))
		p.mu.Unlock()
		if len(victims) == 0 {
			return
		}
		n -= p.close(victims)
	}
}

// close closes the victims' files and returns how many it closed.
func (p *fdPool) close(victims []*Log) int {
	closed := 0
	for _, v := range victims {
		// The caller holds its own log's lock; waiting for a victim's lock
		// could deadlock with a victim evicting us, so a busy victim (one
		// being written right now) is put back instead.
		if v.mu.TryLock() {
			if v.f != nil {
				v.f.Close()
				v.f = nil
				closed++
			}
			v.mu.Unlock()
			continue
		}
		p.mu.Lock()
		if !v.inPool {
			v.inPool = true
			p.n++
			p.pushFront(v)
		}
		p.mu.Unlock()
	}
	return closed
}

// evictLocked unlinks the least recently used logs until at most limit
// remain; the caller closes their files once the pool lock is released.
func (p *fdPool) evictLocked(keep *Log, limit int) []*Log {
	var out []*Log
	for v := p.tail; v != nil && p.n > limit; {
		prev := v.prev
		if v != keep {
			p.unlink(v)
			v.inPool = false
			p.n--
			out = append(out, v)
		}
		v = prev
	}
	return out
}

func (p *fdPool) touch(l *Log) {
	p.mu.Lock()
	if l.inPool && p.head != l {
		p.unlink(l)
		p.pushFront(l)
	}
	p.mu.Unlock()
}

func (p *fdPool) remove(l *Log) {
	p.mu.Lock()
	if l.inPool {
		p.unlink(l)
		l.inPool = false
		p.n--
	}
	p.mu.Unlock()
}

func (p *fdPool) pushFront(l *Log) {
	l.prev, l.next = nil, p.head
	if p.head != nil {
		p.head.prev = l
	}
	p.head = l
	if p.tail == nil {
		p.tail = l
	}
}

func (p *fdPool) unlink(l *Log) {
	if l.prev != nil {
		l.prev.next = l.next
	} else {
		p.head = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	} else {
		p.tail = l.prev
	}
	l.prev, l.next = nil, nil
}
