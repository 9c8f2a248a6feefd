package service

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/internal/wal"
)

// metrics live in the server's own registry, so two servers in one test
// process never collide and /metrics shows only what this server does.
type metrics struct {
	reg *prometheus.Registry

	sessionsActive  prometheus.Gauge
	sessionsStarted prometheus.Counter
	sessionsEnded   prometheus.Counter
	connections     prometheus.Gauge
	events          *prometheus.CounterVec
	inputs          *prometheus.CounterVec
	effects         *prometheus.CounterVec
	clientErrors    *prometheus.CounterVec
	stepSeconds     prometheus.Histogram
	adapterSeconds  *prometheus.HistogramVec
	adapterErrors   *prometheus.CounterVec
	adapterInflight prometheus.Gauge
	walSyncSeconds  *prometheus.HistogramVec
	walErrors       prometheus.Counter
	// ackDeadlineMissed counts inputs answered unavailable at their ack
	// deadline, by outcome.
	ackDeadlineMissed *prometheus.CounterVec
	archiveErrors     prometheus.Counter
	walTruncations    prometheus.Counter
	journalDamage     prometheus.Counter
	scrubbed          *prometheus.CounterVec
	recoveries        *prometheus.CounterVec
	panics            *prometheus.CounterVec
	slowConsumers     prometheus.Counter
	rateLimited       prometheus.Counter
	resumes           *prometheus.CounterVec
	eventToEffectSec  prometheus.Histogram
	warnings          *prometheus.CounterVec
	guardrails        *prometheus.CounterVec
	flags             *prometheus.CounterVec
	turnLateness      *prometheus.HistogramVec
	audioBytes        prometheus.Counter
	audioDropped      *prometheus.CounterVec
	secretRefusals    *prometheus.CounterVec
	unauthorized      prometheus.Counter
}

// Latency buckets from 50 µs to 10 s: engine steps are microseconds, fsyncs
// and local adapters milliseconds, real models seconds.
var latencyBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.sessionsActive = prometheus.NewGauge(prometheus.GaugeOpts{Name: "baton_sessions_active", Help: "Sessions currently hosted (live, not ended)."})
	m.sessionsStarted = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_sessions_started_total", Help: "Sessions started by clients."})
	m.sessionsEnded = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_sessions_ended_total", Help: "Sessions that reached session_end."})
	m.connections = prometheus.NewGauge(prometheus.GaugeOpts{Name: "baton_websocket_connections", Help: "Open WebSocket connections."})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_candidate_events_total", Help: "Candidate events applied, by event type."}, []string{"type"})
	m.inputs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_engine_inputs_total", Help: "Engine inputs logged and applied, by input type."}, []string{"type"})
	m.effects = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_engine_effects_total", Help: "Engine effects produced, by effect type."}, []string{"type"})
	m.clientErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_client_errors_total", Help: "Error replies sent to clients, by code."}, []string{"code"})
	m.stepSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "baton_engine_step_seconds", Help: "Time to apply one input to the engine.", Buckets: latencyBuckets})
	m.turnLateness = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_turn_lateness_seconds",
		Help:    "How late agent messages were said after their turn was due (0 when on time), by turn kind.",
		Buckets: []float64{0, .1, .25, .5, 1, 1.5, 2, 3, 5, 8, 15}}, []string{"kind"})
	m.adapterSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_adapter_seconds", Help: "Adapter call latency, by adapter.", Buckets: latencyBuckets}, []string{"adapter"})
	m.adapterErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_adapter_errors_total", Help: "Failed adapter calls, by adapter and error kind."}, []string{"adapter", "kind"})
	m.adapterInflight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "baton_adapter_calls_in_flight", Help: "Adapter calls waiting for an answer."})
	m.walSyncSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_wal_fsync_seconds", Help: "Write-ahead log sync latency, by what was synced: journal (inputs wait for it), create, finish, checkpoint (nobody waits).", Buckets: latencyBuckets}, []string{"sync"})
	m.walErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_wal_errors_total", Help: "Write-ahead log writes that failed."})
	m.ackDeadlineMissed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_ack_deadline_missed_total", Help: "Inputs not acknowledged within the ack deadline and answered unavailable, by outcome: not_applied (dropped unwritten), unknown (their log write was under way)."}, []string{"outcome"})
	m.archiveErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_archive_errors_total", Help: "Ended sessions whose context files could not be archived."})
	m.walTruncations = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_wal_tail_truncations_total", Help: "Torn or corrupt log tails cut off during recovery."})
	m.journalDamage = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_wal_journal_damage_total", Help: "Damage found in the journal at start: spans that do not read back, segments cut or missing."})
	m.scrubbed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_wal_scrubbed_logs_total", Help: "Finished logs read back by the scrub, by outcome (ok, damaged)."}, []string{"outcome"})
	m.recoveries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_recoveries_total", Help: "Session recoveries from the write-ahead log, by result."}, []string{"result"})
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_panics_total", Help: "Recovered panics, by where they happened."}, []string{"where"})
	m.slowConsumers = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_slow_consumer_disconnects_total", Help: "Connections closed because their client did not take what was sent: a full send queue, a write that timed out, or no answer to pings for the pong wait."})
	m.rateLimited = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_websocket_frames_rate_limited_total", Help: "WebSocket frames (pings included) dropped by the per-connection rate limit, answered with rate_limited or not."})
	m.resumes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_resumes_total", Help: "Session resumes, by how missed effects were found."}, []string{"source"})
	m.eventToEffectSec = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "baton_event_to_first_effect_seconds", Help: "From a candidate event being read to its first effect being queued for sending.", Buckets: latencyBuckets})
	m.warnings = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_pack_warnings_total", Help: "Notes a pack emitted with level: warning (a setup job failed and defaults were used, say), by pack and rule."}, []string{"pack", "rule"})
	m.guardrails = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_guardrail_outcomes_total", Help: "Generated agent lines by what the guardrails did with them (pass, regenerated(N), rewritten, fallback, tripped), by pack, role and the guardrail broken: none for a line said as the model gave it, model_error for a fallback because the model failed; a line that broke two counts under each."}, []string{"pack", "role", "guardrail", "outcome"})
	m.flags = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_flags_total", Help: "Flags a pack raised (its tripwires, input checks or rules), by pack and the check or rule that raised them."}, []string{"pack", "rule"})
	m.audioBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_voice_audio_bytes_total", Help: "Client microphone audio passed to live speech sessions, in bytes."})
	m.audioDropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_voice_audio_dropped_total",
		Help: "Client audio frames dropped, by reason: no_live_session (none open yet, or the floor is moving), rate_limited (over the audio budget), backlog (the live model is behind), too_large, malformed, send_failed (the live session refused it)."}, []string{"reason"})
	m.secretRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_session_secret_refusals_total",
		Help: "Attempts to attach to a session (resume, HTTP event) refused for its secret, by reason: missing or mismatch. Each is answered as for a session that does not exist."}, []string{"reason"})
	m.unauthorized = prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_http_unauthorized_total", Help: "HTTP requests, WebSocket handshakes included, refused with 401 for a missing or wrong bearer token."})
	for _, c := range []prometheus.Collector{
		m.sessionsActive, m.sessionsStarted, m.sessionsEnded, m.connections, m.events, m.inputs, m.effects,
		m.clientErrors, m.stepSeconds, m.adapterSeconds, m.adapterErrors, m.adapterInflight,
		m.walSyncSeconds, m.walErrors, m.ackDeadlineMissed, m.archiveErrors, m.walTruncations, m.journalDamage, m.scrubbed, m.recoveries, m.panics,
		m.slowConsumers, m.rateLimited, m.resumes, m.eventToEffectSec, m.warnings, m.guardrails, m.flags, m.turnLateness,
		m.audioBytes, m.audioDropped, m.secretRefusals, m.unauthorized,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		f(c)
	}
	// Pre-create the label values that are known up front so dashboards
	// see zeros instead of absent series.
	for _, r := range []string{"ok", "damaged"} {
		m.scrubbed.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "finished", "failed", "nondeterministic", "damaged"} {
		m.recoveries.WithLabelValues(r)
	}
	m.adapterSeconds.WithLabelValues("llm")
	for _, r := range audioDropReasons {
		m.audioDropped.WithLabelValues(r)
	}
	for _, r := range secretRefusalReasons {
		m.secretRefusals.WithLabelValues(r)
	}
	return m
}

func (m *metrics) observeSync(k wal.SyncKind, d time.Duration) {
	m.walSyncSeconds.WithLabelValues(string(k)).Observe(d.Seconds())
}

// guardrailOutcome counts a generated line under each guardrail it broke.
func (m *metrics) guardrailOutcome(pack string, e *engine.Effect) {
	if e.Outcome == "" {
		return // a line the pack wrote, not a generated one
	}
	if len(e.Guardrail) == 0 {
		label := "none"
		if e.Fallback {
			label = "model_error"
		}
		m.guardrails.WithLabelValues(pack, e.Agent, label, e.Outcome).Inc()
		return
	}
	for _, g := range e.Guardrail {
		m.guardrails.WithLabelValues(pack, e.Agent, g, e.Outcome).Inc()
	}
}

// processRSS is the process's resident set in bytes from /proc/self/statm
// (its second field, in pages), or 0 where there is no such file.
func processRSS() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
