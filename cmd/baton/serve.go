package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/llm/vendors"

	"github.com/batonhq/baton/runtime/clock"
	"github.com/batonhq/baton/runtime/cluster"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/llm/gemini"
	"github.com/batonhq/baton/runtime/service"
	"github.com/batonhq/baton/runtime/service/dayone"
	"github.com/batonhq/baton/runtime/voice"
	"github.com/batonhq/baton/runtime/voice/elevenlabs"
	"github.com/batonhq/baton/runtime/voice/geminilive"
	"github.com/batonhq/baton/scenarios"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

var serveCommand = &command{
	name: "serve", operands: "", min: 0, max: 0, serves: true,
	summary: "host live sessions (WebSocket, DayOne HTTP, metrics)",
	about: `Hosts live sessions over WebSocket (/ws) and the DayOne HTTP contract
(/sim/session/start, /sim/session/event), with a write-ahead log per session,
crash recovery and Prometheus metrics (/metrics). --data is required. See
docs/protocol.md.`,
	flags: serveFlags,
}

func serveFlags(fl *flag.FlagSet) runFunc {
	addr := fl.String("addr", "127.0.0.1:8080", "listen address; port 0 picks a free one (the address is printed as \"listening on ADDR\")")
	data := fl.String("data", "", "data directory for session logs (required; created if missing)")
	dev := fl.Bool("dev", false, "development mode: no token needed; any Origin, any pack folder and webhooks to private addresses accepted")
	token := fl.String("token", "", "bearer token clients must present (default $BATON_TOKEN)")
	var origins, packRoots, hookHosts stringList
	fl.Var(&origins, "origin", "allowed browser Origin, e.g. https://app.example.com (repeatable)")
	fl.Var(&packRoots, "packs", "folder under which clients may name pack folders (repeatable; bundled packs are always available)")
	fl.Var(&hookHosts, "webhook-host", "allowed DayOne webhook host[:port] (repeatable; listed hosts may be private; default: any public address)")
	maxMsg := fl.Int64("max-message", 64<<10, "largest client frame or HTTP body in bytes")
	rate := fl.Float64("rate", 20, "client frames per second per connection (token bucket rate)")
	burst := fl.Int("burst", 40, "token bucket burst")
	sendQueue := fl.Int("send-queue", 128, "frames queued for a client before it is disconnected as too slow")
	maxConns := fl.Int("max-conns", 20000, "open connections at once, HTTP and WebSocket; more are answered 503 too_many_connections (0: no cap)")
	maxConnsPerIP := fl.Int("max-conns-per-ip", 256, "open connections from one client address (an IPv6 /64 counts as one); loopback is exempt (0: no cap)")
	readTimeout := fl.Duration("read-timeout", 30*time.Second, "time to read one HTTP request, headers and body (0: none; WebSockets are kept by ping/pong instead)")
	writeTimeout := fl.Duration("write-timeout", 30*time.Second, "time to write one HTTP answer (0: none; not WebSockets)")
	idleTimeout := fl.Duration("idle-timeout", 60*time.Second, "time an idle keep-alive HTTP connection is kept open (0: none)")
	scrubEvery := fl.Duration("scrub-interval", service.DefaultScrubInterval, "read every finished log back this often (and at start) to find damage before a client does (0: only at start)")
	admitLatency := fl.Duration("admit-latency", 2*time.Second, "refuse new sessions (overloaded, HTTP 503) while more than 1% of the client events of the last 2 s took longer than this to be acknowledged; running sessions are never refused (0: never refuse)")
	ackDeadline := fl.Duration("ack-deadline", 5*time.Second, "the longest an input waits for its answer: one whose log write has not completed by then is answered unavailable and never acknowledged; start and resume acks state it (ack_deadline_ms) so that clients take a node silent past it for dead (0: no deadline)")
	llmLatency := fl.String("llm-latency", "pack", "simulated model latency: a duration such as 300ms, or \"pack\" for the pack's dry-run latency")
	llmScript := fl.String("llm", "", llmHelp)
	baseURL := fl.String("base-url", "", "with --llm VENDOR: the API base URL")
	model := fl.String("model", "", "with --llm VENDOR: the model (default: the vendor's)")
	// Kept so that existing command lines still start: session logs no
	// longer hold a descriptor between writes, so there is nothing to cap.
	fl.Int("max-open-logs", 0, "no effect (session logs hold no descriptor between writes); accepted so older command lines still run")
	noSync := fl.Bool("no-sync", false, "do not fsync session logs (benchmarking only: a crash can lose acknowledged input)")
	syncMode := fl.String("sync", "all", "which inputs are fsynced before they are applied: all, or external (client events and model answers; timer advances and simulated speech ends, which recovery re-derives, ride on the next sync)")
	voiceName := fl.String("voice", "", "host the live speech of sessions in live voice mode on the server, with `VENDOR`: "+strings.Join(voiceVendors, " or ")+
		" (keys from $GEMINI_API_KEY or $GOOGLE_API_KEY, base URL $GOOGLE_GEMINI_BASE_URL; $ELEVENLABS_API_KEY and $ELEVENLABS_AGENT_ID, base URL $ELEVENLABS_BASE_URL); default: clients host it")
	natsURLs := fl.String("nats", "", "run as one node of a cluster: keep session logs in NATS JetStream at `URL[,URL…]` instead of --data (which still holds archives and evidence), and run only the sessions this node owns (docs/cluster.md)")
	replicas := fl.Int("nats-replicas", 1, "with --nats: copies JetStream keeps of each session log (3 in production; 1 needs a single NATS server)")
	natsStreams := fl.Int("nats-streams", 1, "with --nats: how many JetStream streams hold the session logs, spread by session id so that each stream's leader takes a share of the writes; the same on every node (docs/scaling.md)")
	leaseTTL := fl.Duration("lease-ttl", 2*time.Second, "with --nats: how long a silent node keeps its sessions before other nodes take them over")
	node := fl.String("node", "", "with --nats: this node's name, unique in the cluster (default: the host name)")
	advertise := fl.String("advertise", "", "with --nats: the WebSocket URL other nodes send this node's clients to (default: ws://ADDR/ws from the listening address)")
	logFormat := fl.String("log", "text", "log format: text or json")
	verbose := fl.Bool("v", false, "debug logging")
	return func(ctx context.Context, c *cli, _ []string) error {
		return serve(ctx, c.stdout, c.stderr, serveOptions{
			addr: *addr, data: *data, dev: *dev, token: *token, origins: origins, packRoots: packRoots, hookHosts: hookHosts,
			maxMsg: *maxMsg, rate: *rate, burst: *burst, sendQueue: *sendQueue, maxConns: *maxConns, maxConnsPerIP: *maxConnsPerIP,
			readTimeout: *readTimeout, writeTimeout: *writeTimeout, idleTimeout: *idleTimeout, admitLatency: *admitLatency, ackDeadline: *ackDeadline, llmLatency: *llmLatency, scrubEvery: *scrubEvery,
			llmScript: *llmScript, baseURL: *baseURL, model: *model, noSync: *noSync, syncMode: *syncMode,
			logFormat: *logFormat, verbose: *verbose, voice: *voiceName,
			nats: *natsURLs, replicas: *replicas, streams: *natsStreams, leaseTTL: *leaseTTL, node: *node, advertise: *advertise,
		})
	}
}

type serveOptions struct {
	addr, data, token, llmLatency, llmScript, baseURL, model, syncMode, logFormat, voice string
	dev, noSync, verbose                                                                 bool
	origins, packRoots, hookHosts                                                        stringList
	maxMsg                                                                               int64
	rate                                                                                 float64
	burst, sendQueue, maxConns, maxConnsPerIP                                            int
	readTimeout, writeTimeout, idleTimeout, admitLatency, ackDeadline                    time.Duration
	scrubEvery                                                                           time.Duration
	nats, node, advertise                                                                string
	replicas, streams                                                                    int
	leaseTTL                                                                             time.Duration
}

func serve(ctx context.Context, stdout, stderr io.Writer, o serveOptions) error {
	if o.data == "" {
		return usageError("--data DIR is required: the folder for session logs")
	}
	latency := time.Duration(-1) // the pack's
	if o.llmLatency != "pack" {
		d, err := time.ParseDuration(o.llmLatency)
		if err != nil || d < 0 {
			return usageError("--llm-latency must be a duration such as 300ms, or pack, not %q", o.llmLatency)
		}
		latency = d
	}
	if o.syncMode != "all" && o.syncMode != "external" {
		return usageError("--sync must be all or external, not %q", o.syncMode)
	}
	if o.voice != "" && !slices.Contains(voiceVendors, o.voice) {
		return usageError("--voice must be %s, not %q", strings.Join(voiceVendors, " or "), o.voice)
	}
	if o.token == "" {
		o.token = os.Getenv("BATON_TOKEN")
	}
	if o.token == "" && !o.dev {
		return errors.New("no token: pass --token or set BATON_TOKEN (or use --dev for local work only)")
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	var h slog.Handler
	switch o.logFormat {
	case "text":
		h = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	case "json":
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	default:
		return usageError("--log must be text or json, not %q", o.logFormat)
	}
	logger := slog.New(h)
	var replies []dryrun.Reply
	real, err := realModel(ctx, o.llmScript, o.baseURL, o.model, nil)
	if err != nil {
		return err
	}
	if r, ok := real.(*vendors.Router); ok {
		for _, m := range r.Missing() {
			logger.Warn("a vendor has no key; calls of roles that name it will fail", "vendor", m)
		}
	}
	if real == nil && o.llmScript != "" {
		if replies, err = readReplies(o.llmScript); err != nil {
			return err
		}
	}
	if min(o.readTimeout, o.writeTimeout, o.idleTimeout, o.admitLatency, o.ackDeadline) < 0 {
		return usageError("--read-timeout, --write-timeout, --idle-timeout, --admit-latency and --ack-deadline must not be negative (0 turns each off)")
	}
	if o.maxConns < 0 || o.maxConnsPerIP < 0 {
		return usageError("--max-conns and --max-conns-per-ip must not be negative (0 turns the cap off)")
	}
	// One clock for the server and the cluster it joins: sessions, leases
	// and takeovers all run on it.
	clk := clock.Real()
	cfg := service.Config{
		Clock:   clk,
		DataDir: o.data, Token: o.token, Dev: o.dev, Origins: o.origins, Packs: scenarios.FS, PackRoots: o.packRoots,
		Logger: logger, MaxMessageBytes: o.maxMsg, EventRate: o.rate, EventBurst: o.burst, SendQueue: o.sendQueue,
		NoSync: o.noSync, LazySync: o.syncMode == "external",
		// The Config takes zero for its default and a negative value for off.
		MaxConns: offIfZero(o.maxConns), MaxConnsPerIP: offIfZero(o.maxConnsPerIP),
		HTTPReadTimeout: offIfZero(o.readTimeout), HTTPWriteTimeout: offIfZero(o.writeTimeout), HTTPIdleTimeout: offIfZero(o.idleTimeout),
		AdmitLatency: offIfZero(o.admitLatency), AckDeadline: offIfZero(o.ackDeadline),
		ScrubInterval: scrubInterval(o.scrubEvery),
	}
	cfg.Contracts = []service.Contract{dayone.New(dayone.Config{WebhookHosts: o.hookHosts, AllowPrivateWebhooks: o.dev})}
	cfg.Model = service.SimModel(latency, replies)
	if real != nil {
		cfg.Model = service.RealModel(real)
	}
	if cfg.Voice, err = voiceConnector(ctx, o.voice); err != nil {
		return err
	}
	if cfg.Voice != nil {
		logger.Info("the server hosts the live speech of live voice sessions", "voice", o.voice)
	}
	if o.noSync {
		logger.Warn("fsync disabled: a crash can lose acknowledged input")
	}
	// Listen before the cluster opens: a node advertises the address it
	// listens on, which port 0 only tells once bound.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	if o.nats != "" {
		cl, err := openCluster(ctx, o, ln.Addr().String(), logger, clk)
		if err != nil {
			ln.Close()
			return err
		}
		defer cl.Close()
		cfg.Cluster = cl
		cfg.LazySync = false // every input is written to JetStream before it is applied
	}
	srv, err := service.New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	// Listen first so health checks answer (503 on /readyz) during recovery.
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, ln) }()
	rep, err := srv.Recover(ctx)
	if err != nil {
		<-errc
		return err
	}
	failed := make([]string, 0, len(rep.Failed))
	for id := range rep.Failed {
		failed = append(failed, id)
	}
	sort.Strings(failed)
	for _, id := range failed {
		logger.Error("unrecoverable session left in place", "session_id", id, "why", rep.Failed[id])
	}
	damaged := ""
	if len(rep.Damaged) > 0 {
		damaged = fmt.Sprintf(" (%d with a damaged log, copied under %s)", len(rep.Damaged), filepath.Join(o.data, service.EvidenceDir))
	}
	fmt.Fprintf(stdout, "ready: %d sessions resumed, %d closed, %d failed%s, %d unborn logs removed in %s\n",
		len(rep.Resumed), len(rep.Finished), len(rep.Failed), damaged, len(rep.Unborn), rep.Duration.Round(time.Millisecond))
	err = <-errc
	if f, ok := stderr.(*os.File); ok {
		f.Sync() // flush logs on the way out; a terminal cannot sync, so no error check
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "stopped")
	return nil
}

// openCluster joins the cluster --nats names.
func openCluster(ctx context.Context, o serveOptions, addr string, logger *slog.Logger, clk clock.Clock) (*cluster.Cluster, error) {
	if o.replicas < 1 || o.replicas > 5 {
		return nil, usageError("--nats-replicas must be 1 to 5, not %d", o.replicas)
	}
	if o.streams < 1 || o.streams > 256 {
		return nil, usageError("--nats-streams must be 1 to 256, not %d", o.streams)
	}
	if o.leaseTTL < 500*time.Millisecond {
		return nil, usageError("--lease-ttl must be at least 500ms, not %s", o.leaseTTL)
	}
	adv := o.advertise
	if adv == "" {
		adv = "ws://" + addr + "/ws"
	}
	var urls []string
	for _, u := range strings.Split(o.nats, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, usageError("--nats needs at least one URL, such as nats://127.0.0.1:4222")
	}
	if o.replicas == 1 {
		logger.Warn("one copy of each session log (--nats-replicas 1): losing that NATS server's disk loses sessions; use 3 in production")
	}
	cl, err := cluster.Open(ctx, cluster.Config{URLs: urls, Replicas: o.replicas, Streams: o.streams, LeaseTTL: o.leaseTTL, Node: o.node, Advertise: adv,
		EvidenceDir: filepath.Join(o.data, service.EvidenceDir), Logger: logger, Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("joining the cluster at %s: %w", o.nats, err)
	}
	logger.Info("joined the cluster", "node", cl.Node(), "advertise", adv, "replicas", o.replicas, "streams", o.streams, "lease_ttl", o.leaseTTL)
	return cl, nil
}

// voiceVendors are --voice's values.
var voiceVendors = []string{"gemini-live", "elevenlabs"}

// voiceConnector builds --voice's connector, nil without one. A missing
// key or agent id stops the server at start, naming the variable, rather
// than failing every live session later.
func voiceConnector(ctx context.Context, name string) (voice.Connector, error) {
	switch name {
	case "gemini-live":
		if _, err := gemini.APIKey(""); err != nil {
			return nil, fmt.Errorf("--voice gemini-live needs an API key: set $GEMINI_API_KEY or $GOOGLE_API_KEY")
		}
		c, err := geminilive.New(ctx, geminilive.Config{BaseURL: os.Getenv("GOOGLE_GEMINI_BASE_URL")})
		if err != nil {
			return nil, fmt.Errorf("--voice gemini-live: %w", err)
		}
		// Gemini names were checked against Gemini's list at load; only
		// a role with none is left to refuse.
		if err := checkVoices(name, rules.VendorGemini, nil); err != nil {
			return nil, err
		}
		return c, nil
	case "elevenlabs":
		var missing []string
		for _, v := range []struct{ env, what string }{
			{elevenlabs.EnvAPIKey, "the API key"},
			{elevenlabs.EnvAgentID, "the id of an agent created at https://elevenlabs.io/app/agents"},
		} {
			if strings.TrimSpace(os.Getenv(v.env)) == "" {
				missing = append(missing, fmt.Sprintf("$%s (%s)", v.env, v.what))
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("--voice elevenlabs needs %s", strings.Join(missing, " and "))
		}
		c, err := elevenlabs.New(elevenlabs.Config{})
		if err != nil {
			return nil, fmt.Errorf("--voice elevenlabs: %w", err)
		}
		// Bounded, so a vendor that does not answer stops the start with
		// an error rather than hanging it.
		vctx, cancel := context.WithTimeout(ctx, voiceCheckTimeout)
		list, err := c.Voices(vctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("--voice elevenlabs: checking the packs' voices: %w", err)
		}
		have := map[string]bool{}
		for _, v := range list {
			have[v.VoiceID] = true
		}
		if err := checkVoices(name, rules.VendorElevenLabs, have); err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, nil
}

// voiceCheckTimeout bounds the start-up listing of the speech vendor's
// voices.
const voiceCheckTimeout = 30 * time.Second

// checkVoices refuses to start when a role of a bundled pack has no voice
// for vendor (its own, or the pack's voice.default), or one that is not
// in have (when have is given: the account's ElevenLabs voices). A live
// session would otherwise speak in a voice nobody chose, or fail.
func checkVoices(flag, vendor string, have map[string]bool) error {
	var problems []string
	for _, name := range scenarios.Names() {
		p, err := rules.Load(scenarios.FS, name)
		if err != nil {
			return fmt.Errorf("--voice %s: pack %s: %w", flag, name, err)
		}
		for i := range p.Roles {
			r := &p.Roles[i]
			switch v := p.RoleVoice(r, vendor); {
			case v == "":
				problems = append(problems, fmt.Sprintf("pack %s: role %s has no %s voice (write voice: {%s: ...} on the role, or voice.default in the pack)", name, r.ID, vendor, vendor))
			case have != nil && !have[v]:
				problems = append(problems, fmt.Sprintf("pack %s: role %s: %s voice %q is not one of the account's voices (GET /v1/voices)", name, r.ID, vendor, v))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("--voice %s: the packs' voices do not all exist:\n  %s", flag, strings.Join(problems, "\n  "))
	}
	return nil
}

// offIfZero maps a flag's 0 (off) to the Config's -1 (off); the Config
// reads 0 as "use the default".
func offIfZero[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// scrubInterval maps the flag (0: at start only) to the service's
// setting (negative: at start only).
func scrubInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
