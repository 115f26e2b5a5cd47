// Package bucket opens Steward's JetStream KV buckets so that no writer
// can erase what another wrote. Several planes write some buckets, and
// JetStream honours headers NATS permissions do not see: on a bucket made
// by jetstream.CreateKeyValue, anyone who may put one key may publish it
// with `Nats-Rollup: all`, which purges every key. Buckets opened here
// refuse roll-ups and purges (DenyPurge; a Purgeable bucket leaves the
// purge API to NATS permissions, which give it to the archiver alone),
// and a write-once bucket refuses a second write of a key — a put over it
// or a delete of it — so what is stored stays as it was stored.
//
// A bucket of an earlier version, made without these, is used as it is:
// Open logs a warning naming the command that fixes it, and a connection
// allowed to update streams (steward dev's own) fixes it with Harden.
package bucket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config describes a bucket.
type Config struct {
	Name        string
	Description string
	// TTL, if set, is how long a key is kept.
	TTL      time.Duration
	Replicas int // default 1
	Storage  jetstream.StorageType
	// WriteOnce makes a key, once written, unchangeable: the server
	// refuses a second message on its subject, a put or a delete. For
	// content-addressed blobs and append-only records, whose writers
	// create keys (KeyValue.Create) and never change them.
	WriteOnce bool
	// Purgeable leaves purges to NATS permissions, as the event log does:
	// the content buckets, whose archived tasks' keys the archiver purges
	// (docs/archives.md) and which no plane's user may purge
	// (pkg/natsperm). Roll-ups stay refused, so a writer still cannot
	// purge with a header; a bucket made refusing purges stays so
	// (JetStream cannot lift DenyPurge) and is not warned about.
	Purgeable bool
	// Harden updates an existing bucket that allows roll-ups or purges,
	// or (WriteOnce) second writes, to refuse them. Only for a connection
	// allowed to update streams; a plane's user is not.
	Harden bool
	Logger *slog.Logger // default slog.Default()
}

// Open opens cfg's bucket, creating it where it is missing.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	want := StreamConfig(cfg)
	stream, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			stream, err = js.Stream(ctx, want.Name) // another process created it first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", cfg.Name, err)
	}
	have := stream.CachedInfo().Config
	WarnReplicas(cfg.Logger, want.Name, have.Replicas, want.Replicas)
	if !safe(have, want) {
		if !cfg.Harden {
			cfg.Logger.Warn("bucket allows what lets one writer erase another's keys; update it as a NATS admin",
				"bucket", cfg.Name, "fix", fix(want))
		} else if _, err := js.UpdateStream(ctx, harden(have, want)); err != nil {
			return nil, fmt.Errorf("bucket %s: refuse roll-ups and purges: %w", cfg.Name, err)
		}
	}
	kv, err := js.KeyValue(ctx, cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", cfg.Name, err)
	}
	return kv, nil
}

// StreamName returns the name of the stream behind the bucket name.
func StreamName(name string) string { return "KV_" + name }

// Subject returns the subject that holds key in the bucket name.
func Subject(name, key string) string { return "$KV." + name + "." + key }

// StreamConfig returns the configuration of the stream behind cfg's
// bucket: jetstream.CreateKeyValue's for one value per key, less roll-ups
// and purges.
func StreamConfig(cfg Config) jetstream.StreamConfig {
	dup := 2 * time.Minute
	if cfg.TTL > 0 && cfg.TTL < dup {
		dup = cfg.TTL
	}
	return jetstream.StreamConfig{
		Name:                 StreamName(cfg.Name),
		Description:          cfg.Description,
		Subjects:             []string{Subject(cfg.Name, ">")},
		MaxMsgsPerSubject:    1,
		MaxBytes:             -1,
		MaxMsgs:              -1,
		MaxMsgSize:           -1,
		MaxConsumers:         -1,
		MaxAge:               cfg.TTL,
		Storage:              cfg.Storage,
		Replicas:             max(cfg.Replicas, 1),
		Duplicates:           dup,
		AllowDirect:          true,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: cfg.WriteOnce,
		DenyDelete:           true,
		DenyPurge:            !cfg.Purgeable,
		AllowRollup:          false,
	}
}

// safe reports whether have refuses what want refuses. Write-once needs
// one value per key too: with a history of several, DiscardNewPerSubject
// refuses only the write past the last.
func safe(have, want jetstream.StreamConfig) bool {
	return !have.AllowRollup && (have.DenyPurge || !want.DenyPurge) &&
		(!want.DiscardNewPerSubject || have.DiscardNewPerSubject && have.Discard == jetstream.DiscardNew && have.MaxMsgsPerSubject == 1)
}

func harden(have, want jetstream.StreamConfig) jetstream.StreamConfig {
	have.AllowRollup, have.DenyPurge = false, have.DenyPurge || want.DenyPurge
	if want.DiscardNewPerSubject {
		have.Discard, have.DiscardNewPerSubject, have.MaxMsgsPerSubject = jetstream.DiscardNew, true, 1
	}
	return have
}

// fix is the nats CLI command that makes an existing bucket's stream safe.
func fix(want jetstream.StreamConfig) string {
	cmd := "nats stream edit " + want.Name + " -f --no-allow-rollup"
	if want.DenyPurge {
		cmd += " --deny-purge"
	}
	if want.DiscardNewPerSubject {
		cmd += " --discard new --discard-per-subject --max-msgs-per-subject 1"
	}
	return cmd
}
