// Command go-client calls the service through Go code generated from proto/:
// grpc-go over gRPC and connect-go over the Connect protocol.
//
// It reads TARGET (host:port), PLATFORM_KEY, STUDIO_KEY, USER_ID,
// INSTALLATION_ID, GAME_ID and DAY (a day with events of EVENT_NAME) from the
// environment and prints one JSON object.
package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformapiv1 "platform-backend/gen/go/platformapi/v1"
	"platform-backend/gen/go/platformapi/v1/platformapiv1connect"
)

// calls is what one protocol answered, in the order the calls were made.
type calls struct {
	Valid          bool     `json:"valid"`
	PlatformUserID string   `json:"platform_user_id"`
	Again          string   `json:"again"`
	IdentityKey    string   `json:"identity_key"`
	Tags           []string `json:"tags"`
	TrendEvents    int32    `json:"trend_events"`
	Refused        string   `json:"refused"`
}

func must[T any](value T, err error) T {
	if err != nil {
		panic(err)
	}
	return value
}

func issueRequest() *platformapiv1.IssueRequest {
	return &platformapiv1.IssueRequest{
		PlatformUserId: os.Getenv("USER_ID"),
		InstallationId: os.Getenv("INSTALLATION_ID"),
		GameId:         uint32(must(strconv.Atoi(os.Getenv("GAME_ID")))),
		ChannelId:      "beta",
		BuildVersion:   "1.2.3",
	}
}

func updateRequest(partnerUserID string) *platformapiv1.UpdateRequest {
	return &platformapiv1.UpdateRequest{Players: []*platformapiv1.PlayerUpdate{
		{PartnerUserId: &partnerUserID, TagsAdd: []string{"Go Client"}},
	}}
}

func trendsRequest() *platformapiv1.TrendsRequest {
	day := os.Getenv("DAY")
	return &platformapiv1.TrendsRequest{From: day, To: day, Names: []string{os.Getenv("EVENT_NAME")}}
}

func trendEvents(answer *platformapiv1.TrendsResponse) int32 {
	var total int32
	for _, series := range answer.Series {
		for _, point := range series.Points {
			total += point.Events
		}
	}
	return total
}

// answered is what one protocol's calls answered; refused is the code of the call with a bad key.
func answered(
	verified, again *platformapiv1.VerifyResponse,
	updated *platformapiv1.UpdateResponse,
	trends *platformapiv1.TrendsResponse,
	refused string,
) calls {
	return calls{
		Valid:          verified.Valid,
		PlatformUserID: verified.GetPlatformUserId(),
		Again:          again.GetError(),
		IdentityKey:    updated.Updated[0].IdentityKey,
		Tags:           updated.Updated[0].Tags,
		TrendEvents:    trendEvents(trends),
		Refused:        refused,
	}
}

func overGrpc(ctx context.Context) calls {
	conn := must(grpc.NewClient(os.Getenv("TARGET"), grpc.WithTransportCredentials(insecure.NewCredentials())))
	defer conn.Close()
	keyed := func(key string) context.Context { return metadata.AppendToOutgoingContext(ctx, "x-api-key", key) }
	studio := keyed(os.Getenv("STUDIO_KEY"))
	launch := platformapiv1.NewLaunchTokenServiceClient(conn)
	players := platformapiv1.NewPlayerServiceClient(conn)
	events := platformapiv1.NewEventServiceClient(conn)

	issued := must(launch.Issue(keyed(os.Getenv("PLATFORM_KEY")), issueRequest()))
	verified := must(launch.Verify(studio, &platformapiv1.VerifyRequest{Token: issued.Token}))
	again := must(launch.Verify(studio, &platformapiv1.VerifyRequest{Token: issued.Token}))
	updated := must(players.Update(studio, updateRequest("go-grpc")))
	trends := must(events.Trends(studio, trendsRequest()))
	_, err := launch.Verify(keyed("not-a-key"), &platformapiv1.VerifyRequest{Token: issued.Token})
	return answered(verified, again, updated, trends, status.Code(err).String())
}

func keyed[T any](message *T, key string) *connect.Request[T] {
	request := connect.NewRequest(message)
	request.Header().Set("X-Api-Key", key)
	return request
}

func overConnect(ctx context.Context) calls {
	base := "http://" + os.Getenv("TARGET")
	studio := os.Getenv("STUDIO_KEY")
	launch := platformapiv1connect.NewLaunchTokenServiceClient(http.DefaultClient, base)
	players := platformapiv1connect.NewPlayerServiceClient(http.DefaultClient, base)
	events := platformapiv1connect.NewEventServiceClient(http.DefaultClient, base)

	issued := must(launch.Issue(ctx, keyed(issueRequest(), os.Getenv("PLATFORM_KEY")))).Msg
	verified := must(launch.Verify(ctx, keyed(&platformapiv1.VerifyRequest{Token: issued.Token}, studio))).Msg
	again := must(launch.Verify(ctx, keyed(&platformapiv1.VerifyRequest{Token: issued.Token}, studio))).Msg
	updated := must(players.Update(ctx, keyed(updateRequest("go-connect"), studio))).Msg
	trends := must(events.Trends(ctx, keyed(trendsRequest(), studio))).Msg
	_, err := launch.Verify(ctx, keyed(&platformapiv1.VerifyRequest{Token: issued.Token}, "not-a-key"))
	return answered(verified, again, updated, trends, connect.CodeOf(err).String())
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer := map[string]calls{"grpc": overGrpc(ctx), "connect": overConnect(ctx)}
	must(0, json.NewEncoder(os.Stdout).Encode(answer))
}
