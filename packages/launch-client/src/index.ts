// The package's public API: helpers for the three parties of a launch (launcher, game, studio backend).

export { issueLaunchEnvironment, launchGame, type LaunchDetails, type LauncherOptions } from "./launcher.js";
export { LAUNCH_TOKEN_ENV, TOKEN_EXPIRES_AT_ENV, readLaunchToken, redactLaunchToken } from "./game.js";
export {
  createLaunchVerifier,
  launchAccess,
  type LaunchAccess,
  type LaunchCheck,
  type LaunchRejection,
  type LaunchVerifier,
  type LaunchVerifierOptions,
  type VerifiedLaunch,
} from "./studio.js";
