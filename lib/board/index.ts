// Entry `nest-redis-locks/board`: the lock board (a page and its JSON, served by the application).
export { LockBoardModule } from './lock-board.module.js';
export { DEFAULT_LOCK_BOARD_SETTINGS } from './lock-board-options.js';
export type {
  LockBoardForceRelease,
  LockBoardGuard,
  LockBoardModuleAsyncOptions,
  LockBoardModuleOptions,
  LockBoardRouteOptions,
  LockBoardSettingsOptions,
} from './lock-board-options.js';
export { BOARD_ACTION_HEADER, BOARD_ACTION_VALUE } from './board-requests.js';
export type { BoardView } from './lock-board.service.js';
export type { BoardLoadSample } from './load-history.js';
export type { BoardFleet, BoardFleetInstance } from './fleet-series.js';
export type { LoadCounts, LoadKind } from '../locking/activity/engine-activity.js';
export type {
  BoardEntry,
  BoardEvent,
  BoardHolder,
  BoardLeader,
  BoardScanFailure,
  BoardSnapshot,
  WaitAgeSource,
} from '../read-model/snapshot.types.js';
