package archive_test

import (
	"fmt"

	"github.com/steward-run/steward/pkg/archive"
)

func ExampleParseRetention() {
	r, err := archive.ParseRetention("720h,acme=24h,beta=0")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Age("acme"), r.Age("beta"), r.Age("anyone else"))
	// Output: 24h0m0s 0s 720h0m0s
}
