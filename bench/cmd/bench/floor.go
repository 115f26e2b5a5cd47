package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
)

// embeddedJetStream starts an embedded NATS server, its store in a new
// temporary directory named from prefix, as `steward dev` does, and
// connects to it; done stops it and removes the directory.
func embeddedJetStream(prefix string) (jetstream.JetStream, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, nil, err
	}
	bus, err := embedded.Start(embedded.Config{StoreDir: dir})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	stop := func() { bus.Shutdown(); os.RemoveAll(dir) }
	nc, err := bus.Connect()
	if err != nil {
		stop()
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		stop()
		return nil, nil, err
	}
	return js, func() { nc.Close(); stop() }, nil
}

// runFloor is arm (a): what a four-plane pipeline costs on JetStream with
// nothing of Steward's: the client appends, and four durable consumers
// each receive the previous append and append the next. The action is
// done when the fifth append is acknowledged.
func runFloor(o opts) (Result, error) {
	js, done, err := embeddedJetStream("bench-floor-")
	if err != nil {
		return Result{}, err
	}
	defer done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "HOP", Subjects: []string{"hop.>"}, Storage: jetstream.FileStorage}); err != nil {
		return Result{}, err
	}
	var waiting sync.Map // flow -> chan struct{}
	for k := 1; k <= 4; k++ {
		cc, err := reactEach(ctx, js, "HOP", fmt.Sprint("hop", k), fmt.Sprintf("hop.%d.>", k-1), func(m jetstream.Msg) error {
			flow := strings.SplitN(m.Subject(), ".", 3)[2]
			if _, err := js.Publish(ctx, fmt.Sprintf("hop.%d.%s", k, flow), m.Data()); err != nil {
				return err
			}
			if k == 4 {
				if ch, ok := waiting.LoadAndDelete(flow); ok {
					close(ch.(chan struct{}))
				}
			}
			return nil
		})
		if err != nil {
			return Result{}, err
		}
		defer cc.Stop()
	}
	payload := make([]byte, 512) // about the size of a sealed Steward event
	one := flowActions(&waiting, func(flow string) error {
		_, err := js.Publish(ctx, "hop.0."+flow, payload)
		return err
	})
	return phases(o.latencyN, o.throughputN, one, nil)
}

// reactEach runs a durable consumer of filter on stream that hands each
// message to fn on a goroutine of its own, as Steward's planes work on
// different tasks in parallel lanes, and acknowledges it when fn is done,
// negatively when fn fails.
func reactEach(ctx context.Context, js jetstream.JetStream, stream, durable, filter string, fn func(jetstream.Msg) error) (jetstream.ConsumeContext, error) {
	c, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: durable, FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		return nil, err
	}
	return c.Consume(func(m jetstream.Msg) {
		go func() {
			if err := fn(m); err != nil {
				_ = m.Nak()
				return
			}
			_ = m.Ack()
		}()
	})
}

// flowActions is phases' action for a pipeline of reactions to messages:
// begin starts a new flow, and its last reaction closes the channel
// stored under the flow's name in waiting.
func flowActions(waiting *sync.Map, begin func(flow string) error) func(int) ([]time.Duration, int, error) {
	var seq atomic.Int64
	return func(int) ([]time.Duration, int, error) {
		flow := fmt.Sprint("f", seq.Add(1))
		ch := make(chan struct{})
		waiting.Store(flow, ch)
		start := time.Now()
		if err := begin(flow); err != nil {
			return nil, 0, err
		}
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			return nil, 0, fmt.Errorf("flow %s did not finish in 30s", flow)
		}
		return []time.Duration{time.Since(start)}, 1, nil
	}
}
