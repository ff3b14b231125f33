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
export type { BoardFleet, BoardFleetInstance, BoardLoadSample } from './board-fleet.types.js';
export type { LoadCounts, LoadKind } from '../types/load.types.js';
export type {
  BoardEntry,
  BoardEvent,
  BoardHolder,
  BoardLeader,
  BoardScanFailure,
  BoardSnapshot,
  WaitAgeSource,
} from '../read-model/snapshot.types.js';
