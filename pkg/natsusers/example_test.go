package natsusers_test

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/steward-run/steward/pkg/natsusers"
)

func ExampleRender() {
	conf := natsusers.Render([]natsusers.User{{
		Plane: "state",
		NKey:  "UD56SULUMZJS4VAHXSRIUDA46HUPG4OR44OXWTT3ZS5FEIXFZNYMXAY7",
		Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"steward.task.*.task.stalled"}, Deny: []string{"$JS.API.STREAM.PURGE.>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX_state.>"}},
		},
	}})
	fmt.Print(string(conf))
	// Output:
	// # Written by 'steward nats-users': one NATS user per Steward plane, allowed
	// # to publish only the events its plane owns and to read only what it reads.
	// # Include it from the nats-server config (include "users.conf", a path
	// # relative to that file); run the command again after upgrading Steward.
	// authorization {
	//   users = [
	//     # state plane
	//     {
	//       nkey: "UD56SULUMZJS4VAHXSRIUDA46HUPG4OR44OXWTT3ZS5FEIXFZNYMXAY7"
	//       permissions: {
	//         publish: {
	//           allow: [
	//             "steward.task.*.task.stalled"
	//           ]
	//           deny: [
	//             "$JS.API.STREAM.PURGE.>"
	//           ]
	//         }
	//         subscribe: {
	//           allow: [
	//             "_INBOX_state.>"
	//           ]
	//         }
	//       }
	//     }
	//   ]
	// }
}
