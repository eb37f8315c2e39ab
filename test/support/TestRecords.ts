// For tests of the record engine against a real database (TestDatabase: PGlite, or PostgreSQL when DATABASE_URL is
// set): RecordService and RecordEngine (the engine behind RecordWriter) with what they need, and an owner of the test
// workspace writing through the API.
import type { Principal } from "@troupe/api/Authorization"
import { Layer } from "effect"
import { Secrets } from "../../packages/server/src/platform/Secrets.ts"
import { FileLookupLayer } from "../../packages/server/src/storage/FileLookupLayer.ts"
import { StructureService } from "../../packages/server/src/structures/StructureService.ts"
import type { Writer } from "../../packages/server/src/records/model.ts"
import { RecordService } from "../../packages/server/src/records/RecordService.ts"
import { RecordEngine } from "../../packages/server/src/records/write/Engine.ts"
import { TEST_WORKSPACE, TestDatabase } from "./TestDatabase.ts"

export const owner: Principal = {
  kind: "user",
  id: "u-1",
  name: "owner",
  workspace: TEST_WORKSPACE,
  role: "owner",
  permissions: new Set(["write:structures", "write:records", "read:records"]),
  isPlatformAdmin: false,
  groups: []
}

export const writer: Writer = { workspace: TEST_WORKSPACE, userId: "u-1", userName: "owner", source: "api", canSkipValidation: true }

export const RecordServices = () =>
  Layer.merge(RecordService.layer, RecordEngine.layer).pipe(
    Layer.provideMerge(StructureService.layer),
    Layer.provideMerge(FileLookupLayer),
    Layer.provideMerge(Secrets.layer),
    Layer.provideMerge(TestDatabase())
  )
