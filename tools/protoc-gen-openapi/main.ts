// The protoc plugin buf.gen.yaml runs (through tsx) to write gen/openapi/openapi.json.
import { runNodeJs } from "@bufbuild/protoplugin";
import { openapiPlugin } from "./plugin.js";

runNodeJs(openapiPlugin);
