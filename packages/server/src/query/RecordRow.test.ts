// decodeRecordRow: the drivers' native rows take the checked fast path, anything else the schema, and both agree.
import { describe, expect, it } from "vitest"
import { decodeRecordRow } from "./RecordRow.ts"

const native = {
  id: "0b7c2f5e-58f2-4f6c-9b1e-2f4d0f6a1c11",
  workspace: "default",
  structure_id: "6f1f3c1e-7a3e-4b0b-8f37-5d5b1f0c2a22",
  data: { title: "a" },
  metadata: {},
  version: 3,
  status: "active",
  created_by: "1",
  updated_by: null,
  created_at: new Date("2026-01-02T03:04:05.678Z"),
  updated_at: new Date("2026-01-02T03:04:06.000Z"),
  deleted_at: null,
  expires_at: "2027-01-01 00:00:00+00",
  cursor: "extra columns are dropped"
}

describe("decodeRecordRow", () => {
  it("decodes a native row and the same row as text (jsonb as JSON, bigint version) alike", () => {
    const fast = decodeRecordRow(native)
    const text = decodeRecordRow({ ...native, data: JSON.stringify(native.data), metadata: "{}", version: 3n })
    expect(fast).toStrictEqual(text)
    expect(fast).toStrictEqual({
      id: native.id,
      workspace: "default",
      structureId: native.structure_id,
      data: { title: "a" },
      metadata: {},
      version: 3,
      status: "active",
      createdBy: "1",
      updatedBy: null,
      createdAt: "2026-01-02T03:04:05.678Z",
      updatedAt: "2026-01-02T03:04:06.000Z",
      deletedAt: null,
      expiresAt: "2027-01-01T00:00:00.000Z"
    })
  })

  it("refuses a row that does not match the table (a defect)", () => {
    expect(() => decodeRecordRow({ ...native, id: 7 })).toThrow()
    expect(() => decodeRecordRow({ ...native, status: undefined })).toThrow()
    expect(() => decodeRecordRow(null)).toThrow()
  })
})
