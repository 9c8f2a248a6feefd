package service

import (
	"errors"
	"io/fs"
	"log/slog"
	"time"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/voice"
)

// Config sets up a Server. Zero values get the defaults noted on each field.
type Config struct {
	// DataDir holds the session logs. Required.
	DataDir string
	// fs is the file system under DataDir (default the real one). It is
	// unexported because only tests set it, to a waltest.StrictMem that
	// can cut the power.
	fs wal.FS
	// Token is the bearer token clients must present. Empty is refused
	// unless Dev is set.
	Token string
	// Dev relaxes security for local work: no token needed, any Origin and
	// any pack folder accepted.
	Dev bool
	// Origins allowed for browser WebSocket and CORS requests (exact
	// scheme://host[:port]). Requests without an Origin header (non-browser
	// clients) are always allowed; browsers need a listed origin (or Dev).
	Origins []string
	// Packs holds the bundled packs clients may name, one folder each at
	// its root (baton serve passes scenarios.FS). Nil: none.
	Packs fs.FS
	// PackRoots are folders under which clients may name pack folders.
	PackRoots []string
	// Contracts are client protocols mounted beside the WebSocket API
	// (baton serve mounts runtime/service/dayone).
	Contracts []Contract

	// Clock is the server's time source (default: the real clock).
	Clock clock.Clock
	// Model makes each session's model (default: SimModel(-1, nil), the
	// pack's simulated model at the pack's dry-run latency).
	Model ModelFactory
	// Logger receives structured logs (default: slog.Default()).
	Logger *slog.Logger
	// Cluster, when set, keeps session logs in its replicated log
	// instead of DataDir and runs only the sessions this node owns
	// (cluster.go). DataDir still holds archives and evidence.
	Cluster Cluster
	// Voice, when set, hosts the live speech of every session in live
	// voice mode on the server (voice.go): the client streams microphone
	// audio and gets the agent's back. Nil (the default): clients host
	// live sessions themselves.
	Voice voice.Connector

	// MaxMessageBytes bounds one client frame or HTTP body (default 64 KiB).
	// A frame up to 4x this is read and refused with too_large; anything
	// larger closes the connection with 1009.
	MaxMessageBytes int64
	// MaxStartBytes bounds a start frame or a DayOne start body, which
	// may carry a session's inputs with files inline (default 1 MiB,
	// never less than MaxMessageBytes): about 750 KB of files as base64.
	// Larger files are uploaded first (POST /v1/uploads) and named by
	// their sha256. Only a connection without a session takes a frame
	// over MaxMessageBytes, and only a start frame.
	MaxStartBytes int64
	// MaxUploadBytes bounds one upload (default, and at most,
	// rules.MaxInputFiles: all of a session's files together).
	MaxUploadBytes int64
	// UploadStoreBytes bounds the uploads the server holds together
	// (default 64 MiB): past it, the oldest are dropped first.
	// ScrubInterval is how often finished logs are read back to find
	// damage before a client does (DefaultScrubInterval when zero; a
	// negative value scrubs once, at start).
	ScrubInterval time.Duration
	// UploadTTL is how long an upload is kept on the server's clock
	// (default 1 hour); a session that started with it keeps its own
	// copy in its log.
	UploadStoreBytes int64
	UploadTTL        time.Duration
	// EventRate and EventBurst are the token bucket for client frames per
	// connection (and per session for HTTP events). Defaults 20/s, 40.
	EventRate  float64
	EventBurst int
	// MaxRejected closes a connection (1008) when more than this many of
	// its frames are refused by the rate limit within a minute (default
	// 100).
	MaxRejected int
	// SendQueue is how many frames may wait for a slow client before it
	// is disconnected with 1013 (default 128).
	SendQueue int
	// PingInterval and PongWait drive WebSocket keepalive (defaults 20 s,
	// 60 s). WriteTimeout bounds one frame write (default 10 s).
	PingInterval time.Duration
	PongWait     time.Duration
	WriteTimeout time.Duration
	// ClientTimeTolerance is how far ahead of the server a client's
	// event timestamp may be before the server's time is used (default 2 s).
	ClientTimeTolerance time.Duration
	// ResumeRing is how many recent effect frames each session keeps for
	// cheap resumes; older ones are re-derived from the log (default 16).
	ResumeRing int
	// LLMGrace is added to a request's own timeout before its adapter
	// call is cancelled (default 2 s).
	LLMGrace time.Duration
	// NoSync disables fsync (benchmarks of everything else only).
	NoSync bool
	// LazySync syncs only inputs that cannot be re-derived (client events,
	// model answers, client speech ends); timer advances and server-played
	// speech ends are written ahead and made durable by the next synced
	// input. Recovery re-makes a lost tail of them identically. Default
	// off: every input is synced before it is applied.
	LazySync bool
	// InboxTimeout is how long a client waits for a busy session before
	// getting a busy error (default 5 s).
	InboxTimeout time.Duration
	// AckDeadline is the longest an input waits for its answer (default
	// 5 s), from when it was read to its ack: one not acknowledged by
	// then, its log write stalled or not yet begun, is answered
	// unavailable and never acknowledged (ackdeadline.go). Start and
	// resume acks state it, so that a client can tell a node paused or cut
	// off from a slow one. Negative turns it off.
	AckDeadline time.Duration
	// AdmitLatency is the answer time past which the node takes no new
	// sessions: while more than 1% of the client events of the last two
	// seconds were acknowledged later than this after being read, a start
	// is refused with overloaded (admission.go). Default 2 s; negative
	// turns it off.
	AdmitLatency time.Duration

	// The rest apply to Serve; a caller serving Handler itself sets its
	// own. Negative values turn a limit off.
	//
	// HTTPReadTimeout bounds reading one plain HTTP request, headers and
	// body (default 30 s); HTTPWriteTimeout bounds writing its answer
	// (default 30 s); HTTPIdleTimeout closes a keep-alive connection that
	// sends no next request (default 60 s). A WebSocket leaves all three
	// behind at the upgrade: PingInterval, PongWait and WriteTimeout keep
	// it instead.
	HTTPReadTimeout  time.Duration
	HTTPWriteTimeout time.Duration
	HTTPIdleTimeout  time.Duration
	// MaxConns caps open connections, HTTP (idle keep-alive ones too) and
	// WebSocket (default 20000: twice the 10,000 sessions the service is
	// measured at). Connections over it are answered 503
	// too_many_connections and closed.
	MaxConns int
	// MaxConnsPerIP caps the open connections of one client address, an
	// IPv6 /64 counting as one address (default 256). Loopback clients
	// are exempt unless LimitLoopback is set: local load tests open
	// thousands, and a reverse proxy on the same host (which should cap
	// its own clients) would otherwise be held to one client's share.
	MaxConnsPerIP int
	LimitLoopback bool
}

func (c *Config) setDefaults() error {
	if c.DataDir == "" {
		return errors.New("service: DataDir is required")
	}
	if c.Token == "" && !c.Dev {
		return errors.New("service: refusing to start without a token (set one, or use dev mode for local work)")
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	setDefault(&c.MaxMessageBytes, 64<<10)
	setDefault(&c.MaxStartBytes, 1<<20)
	c.MaxStartBytes = max(c.MaxStartBytes, c.MaxMessageBytes)
	setDefault(&c.MaxUploadBytes, rules.MaxInputFiles)
	c.MaxUploadBytes = min(c.MaxUploadBytes, rules.MaxInputFiles)
	setDefault(&c.UploadStoreBytes, 64<<20)
	c.UploadStoreBytes = max(c.UploadStoreBytes, c.MaxUploadBytes)
	setDefault(&c.UploadTTL, time.Hour)
	setDefault(&c.EventRate, 20)
	setDefault(&c.EventBurst, 40)
	setDefault(&c.MaxRejected, 100)
	setDefault(&c.SendQueue, 128)
	setDefault(&c.PingInterval, 20*time.Second)
	setDefault(&c.PongWait, 60*time.Second)
	setDefault(&c.WriteTimeout, 10*time.Second)
	setDefault(&c.ClientTimeTolerance, 2*time.Second)
	setDefault(&c.ResumeRing, 16)
	setDefault(&c.LLMGrace, 2*time.Second)
	setDefault(&c.InboxTimeout, 5*time.Second)
	setDefault(&c.AckDeadline, 5*time.Second)
	setDefault(&c.AdmitLatency, 2*time.Second)
	setDefault(&c.HTTPReadTimeout, 30*time.Second)
	setDefault(&c.HTTPWriteTimeout, 30*time.Second)
	setDefault(&c.HTTPIdleTimeout, 60*time.Second)
	setDefault(&c.MaxConns, 20000)
	setDefault(&c.MaxConnsPerIP, 256)
	if c.Model == nil {
		c.Model = SimModel(-1, nil)
	}
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
