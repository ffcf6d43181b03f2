"""Issues and verifies a launch token through a grpcio client generated from proto/.

Reads TARGET (host:port), GEN_DIR (the generated code), PLATFORM_KEY, STUDIO_KEY,
USER_ID, INSTALLATION_ID and GAME_ID from the environment; prints one JSON line.
"""

import json
import os
import sys

sys.path.insert(0, os.environ["GEN_DIR"])

import grpc  # noqa: E402
# The standard library's platform module, loaded first (grpc loads it too): under the old proto package
# name the next import failed with "No module named 'platform.v1'; 'platform' is not a package".
import platform  # noqa: E402
from platformapi.v1 import launch_pb2, launch_pb2_grpc  # noqa: E402


def call(method, request, key):
    return method(request, metadata=[("x-api-key", key)], timeout=30)


with grpc.insecure_channel(os.environ["TARGET"]) as channel:
    stub = launch_pb2_grpc.LaunchTokenServiceStub(channel)
    issued = call(
        stub.Issue,
        launch_pb2.IssueRequest(
            platform_user_id=os.environ["USER_ID"],
            installation_id=os.environ["INSTALLATION_ID"],
            game_id=int(os.environ["GAME_ID"]),
            channel_id="beta",
            build_version="1.2.3",
        ),
        os.environ["PLATFORM_KEY"],
    )
    verified = call(stub.Verify, launch_pb2.VerifyRequest(token=issued.token), os.environ["STUDIO_KEY"])
    again = call(stub.Verify, launch_pb2.VerifyRequest(token=issued.token), os.environ["STUDIO_KEY"])
    try:
        call(stub.Verify, launch_pb2.VerifyRequest(token=issued.token), "not-a-key")
        refused = None
    except grpc.RpcError as error:
        refused = error.code().name

print(
    json.dumps(
        {
            "stdlib_platform": callable(getattr(platform, "python_version", None)),
            "token_parts": len(issued.token.split(".")),
            "env": dict(issued.env),
            "expires_at": issued.expires_at.ToJsonString(),
            "valid": verified.valid,
            "platform_user_id": verified.platform_user_id,
            "installation_id": verified.installation_id,
            "has_error": verified.HasField("error"),
            "issued_at_set": verified.HasField("issued_at"),
            "entitlement": {
                "owns": verified.entitlement.owns,
                "game_id": verified.entitlement.game_id,
                "channel_id": verified.entitlement.channel_id,
                "build_version": verified.entitlement.build_version,
            },
            "again": {"valid": again.valid, "error": again.error, "has_platform_user_id": again.HasField("platform_user_id")},
            "refused": refused,
        }
    )
)
