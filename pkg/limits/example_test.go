package limits_test

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
)

func ExampleCheck() {
	req := &stewardv1.GetTaskRequest{TaskId: strings.Repeat("x", 1<<20)}
	fmt.Println(limits.Check(req.ProtoReflect()))
	// Output: task_id: is 1048576 bytes; the limit is 64
}

func ExampleDuration() {
	fmt.Println(limits.Duration("contract.timers.stall_after", durationpb.New(time.Nanosecond), time.Minute, 30*24*time.Hour))
	// Output: contract.timers.stall_after: 1ns is outside 1m0s–720h0m0s (zero means the default)
}
