package service

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/batonhq/baton/runtime/internal/wal"
)

// Session secrets. The server token admits a client to the server; it
// does not make every session the client's own. A start therefore hands
// its client a secret of the session's own, and attaching to the session
// later (a resume, an HTTP event) needs it. The log header keeps only the
// secret's SHA-256 (hostOptions.SecretSHA256), so the secret survives a
// restart, a recovery and a move to another node of a cluster, and a
// copy of the log does not give it away.
//
// A client without the right secret is answered exactly as for a session
// that does not exist: a stranger learns nothing about which ids are in
// use. Logs written before sessions had secrets carry no hash; those
// sessions keep taking the server token alone.

// SecretHeader carries a session's secret on HTTP requests that name the
// session (POST /sim/session/event).
const SecretHeader = "Baton-Session-Secret"

// secretBytes is the secret's entropy: 256 bits, far beyond guessing.
const secretBytes = 32

// Why a secret was refused, as counted and logged.
const (
	secretMissing  = "missing"
	secretMismatch = "mismatch"
)

var secretRefusalReasons = []string{secretMissing, secretMismatch}

// newSecret makes a session's secret and the hash its log keeps.
func newSecret() (secret, hash string, err error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("making a session secret: %w", err)
	}
	secret = base64.RawURLEncoding.EncodeToString(b)
	return secret, hashSecret(secret), nil
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// secretRefusal says why secret does not open a session whose log keeps
// hash, or "" when it does. A session without a hash predates secrets.
func secretRefusal(hash, secret string) string {
	switch {
	case hash == "":
		return ""
	case secret == "":
		return secretMissing
	}
	// Both sides are hex digests of one length: comparing them in
	// constant time tells nothing of how much of a guess was right.
	if subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(hash)) != 1 {
		return secretMismatch
	}
	return ""
}

// notFound is the answer for a session id this server has no session
// for, and, word for word, for a session the client has no secret for.
func notFound(id string) *ProtoError {
	return perr(CodeSessionNotFound, "no session %s on this server", id)
}

// refuseSecret logs and counts a refused secret and returns the refusal.
// The secret itself is never logged.
func (srv *Server) refuseSecret(id, remote, via, reason string) *ProtoError {
	srv.m.secretRefusals.WithLabelValues(reason).Inc()
	srv.log.Warn("session secret refused", "remote", remote, "session_id", id, "via", via, "reason", reason)
	return notFound(id)
}

// checkSecret decides whether a client presenting secret may attach to
// session id, wherever the session is: running here, finished, failed or
// running on another node. It answers nil when the secret opens it, when
// the session predates secrets, or when there is no such session (the
// caller's own path then answers not found); otherwise the refusal.
//
// A log that cannot be read (damaged, or the cluster's store did not
// answer) cannot say whether the secret is right, nor can it give anyone
// the session: the caller's path answers as it would without secrets,
// with session_failed for a damaged log, which a start of the id would
// also tell. Refusing instead would tell the session's own client that
// its session does not exist.
func (srv *Server) checkSecret(id, secret, remote, via string) *ProtoError {
	if s := srv.lookup(id); s != nil {
		return srv.checkSessionSecret(s, secret, remote, via)
	}
	rec, err := srv.logs().Read(id)
	if errors.Is(err, wal.ErrNotFound) {
		return nil
	}
	var host hostOptions
	if err == nil {
		host, err = decodeHost(rec.Header.Host)
	}
	if err != nil {
		srv.log.Info("session secret not checked: its log cannot be read", "remote", remote, "session_id", id, "via", via, "err", err)
		return nil
	}
	if reason := secretRefusal(host.SecretSHA256, secret); reason != "" {
		return srv.refuseSecret(id, remote, via, reason)
	}
	return nil
}

// checkSessionSecret is checkSecret for a session at hand.
func (srv *Server) checkSessionSecret(s *session, secret, remote, via string) *ProtoError {
	if reason := secretRefusal(s.host.SecretSHA256, secret); reason != "" {
		return srv.refuseSecret(s.id, remote, via, reason)
	}
	return nil
}
