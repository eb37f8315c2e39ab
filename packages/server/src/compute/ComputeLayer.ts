// The compute domain on one node: the services behind the compute routes, the sandbox (this node's isolates) and
// the run worker (executes runs claimed by this node).
import { Effect, Layer } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { DraftRepo } from "./DraftRepo.ts"
import { DraftService } from "./DraftService.ts"
import { FunctionRepo } from "./FunctionRepo.ts"
import { FunctionService } from "./FunctionService.ts"
import { RunRepo } from "./RunRepo.ts"
import { RunService } from "./RunService.ts"
import { RunWorker } from "./RunWorker.ts"
import { defaultLimits, Sandbox } from "./Sandbox.ts"
import { TriggerParams } from "./TriggerParams.ts"
import { TriggerRepo } from "./TriggerRepo.ts"
import { TriggerService } from "./TriggerService.ts"

const SandboxLayer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    return Sandbox.layer(
      defaultLimits({
        timeoutMs: config.functionTimeoutMs,
        memoryMb: config.functionMemoryMb,
        concurrency: config.functionConcurrency,
        nodeMemoryMb: config.functionNodeMemoryMb
      })
    )
  })
)

const Repos = Layer.mergeAll(FunctionRepo.layer, TriggerRepo.layer, DraftRepo.layer, RunRepo.layer)

const Runs = RunService.layerNoDeps.pipe(Layer.provideMerge(RunWorker.layer))

/** Provides FunctionService, TriggerService, DraftService, RunService and RunWorker. */
export const ComputeLayer = Layer.mergeAll(FunctionService.layerNoDeps, TriggerService.layerNoDeps, DraftService.layerNoDeps).pipe(
  Layer.provideMerge(Runs),
  Layer.provideMerge(Layer.mergeAll(SandboxLayer, TriggerParams.layer)),
  Layer.provideMerge(Repos)
)
