#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so `npx platformctl` works straight after `npm install`.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/platformctl.ts");
