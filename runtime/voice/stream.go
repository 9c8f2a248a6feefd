package voice

// Stream is the delivery side every LiveSession implementation shares:
// the buffered event channel, the signal its Close raises, and the exit
// of its one reader goroutine. It keeps LiveSession's promises in one
// place: events arrive in order and end with EventClosed, a closed
// session's reader never blocks on a consumer that stopped reading, and
// Close can wait for the reader to be gone.
//
// The reader calls Emit for each event, and on its way out (deferred, in
// this order) Finish with the final event and then Exit. Close calls
// Stop, closes the connection, then Wait.
type Stream struct {
	events chan Event
	// stop is closed by Stop; the reader stops delivering once it is.
	stop chan struct{}
	// exited is closed when the reader goroutine has exited.
	exited chan struct{}
}

// NewStream makes a stream buffering up to buffer events.
func NewStream(buffer int) *Stream {
	return &Stream{events: make(chan Event, buffer), stop: make(chan struct{}), exited: make(chan struct{})}
}

// Events is what LiveSession.Events returns.
func (s *Stream) Events() <-chan Event { return s.events }

// Emit delivers ev unless the session is stopped first; it reports
// whether it delivered, so a reader that gets false returns.
func (s *Stream) Emit(ev Event) bool {
	select {
	case s.events <- ev:
		return true
	case <-s.stop:
		return false
	}
}

// Finish delivers the last events. An abnormal end is announced twice,
// as an error and on the closed event, so consumers that only watch for
// errors see it too. After Stop nobody may be reading, so delivery is
// then best effort into the buffer.
func (s *Stream) Finish(final Event) {
	if final.Err != nil {
		s.deliver(Event{Kind: EventError, Err: final.Err})
	}
	s.deliver(final)
}

func (s *Stream) deliver(ev Event) {
	if s.Emit(ev) {
		return
	}
	select {
	case s.events <- ev:
	default:
	}
}

// Exit closes the event channel and marks the reader gone; the reader
// defers it, after Finish.
func (s *Stream) Exit() {
	close(s.events)
	close(s.exited)
}

// Stop tells the reader to stop delivering. It must be called once (the
// session's Close guards it with a sync.Once).
func (s *Stream) Stop() { close(s.stop) }

// Stopped reports whether Stop was called: a read or write error after
// it is the session closing, not a failure.
func (s *Stream) Stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// Wait returns once the reader has exited.
func (s *Stream) Wait() { <-s.exited }

// Exited reports whether the reader has exited, without waiting.
func (s *Stream) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}
