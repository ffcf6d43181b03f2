// The package's public API: helpers for the three parties of a launch.

export {
  issueLaunchEnvironment,
  launchGame,
  type LaunchDetails,
  type LauncherOptions,
} from "./launch/client/launcher.js";
export { LAUNCH_TOKEN_ENV, TOKEN_EXPIRES_AT_ENV, readLaunchToken, redactLaunchToken } from "./launch/client/game.js";
export {
  createLaunchVerifier,
  launchAccess,
  type LaunchAccess,
  type LaunchCheck,
  type LaunchRejection,
  type LaunchVerifier,
  type LaunchVerifierOptions,
  type VerifiedLaunch,
} from "./launch/client/studio.js";
