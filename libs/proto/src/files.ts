/**
 * The Kairos .proto files as runtime descriptors, for gRPC server reflection
 * (grpcurl, Postman, Evans discover the API without the .proto sources).
 *
 * @grpc/reflection's `ReflectionService` takes what @grpc/proto-loader would
 * produce: an object whose entries carry `fileDescriptorProtos`, the serialized
 * `google.protobuf.FileDescriptorProto` of each file. `reflectionPackageDefinition`
 * builds exactly that from the generated descriptors, imports included:
 *
 *   new ReflectionService(reflectionPackageDefinition()).addToServer(server);
 */
import { toBinary, type DescFile } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { file_kairos_v1_agent } from './gen/kairos/v1/agent_pb';
import { file_kairos_v1_jobs } from './gen/kairos/v1/jobs_pb';
import { file_kairos_v1_tokens } from './gen/kairos/v1/tokens_pb';
import { file_kairos_v1_webhooks } from './gen/kairos/v1/webhooks_pb';

/** Every Kairos .proto file (not their imports), as generated descriptors. */
export const KAIROS_FILES: readonly DescFile[] = [file_kairos_v1_jobs, file_kairos_v1_agent, file_kairos_v1_tokens, file_kairos_v1_webhooks];

/** The files plus everything they import, each listed once, imports before importers. */
export function filesWithImports(files: readonly DescFile[] = KAIROS_FILES): DescFile[] {
  const ordered: DescFile[] = [];
  const seen = new Set<string>();
  const visit = (file: DescFile): void => {
    if (seen.has(file.name)) return;
    seen.add(file.name);
    file.dependencies.forEach(visit);
    ordered.push(file);
  };
  files.forEach(visit);
  return ordered;
}

/** Serialized FileDescriptorProto of the files and their imports (imports first). */
export function fileDescriptorProtos(files: readonly DescFile[] = KAIROS_FILES): Buffer[] {
  return filesWithImports(files).map((file) => {
    const bytes = toBinary(FileDescriptorProtoSchema, file.proto);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  });
}

/** Package-definition-shaped input for @grpc/reflection's `ReflectionService`. */
export interface ReflectionPackageDefinition {
  readonly [name: string]: {
    readonly format: string;
    readonly type: object;
    readonly fileDescriptorProtos: Buffer[];
  };
}

/**
 * Input for `new ReflectionService(…)`: one entry holding every Kairos file and
 * its imports, so reflection can answer for both services and all their types.
 */
export function reflectionPackageDefinition(files: readonly DescFile[] = KAIROS_FILES): ReflectionPackageDefinition {
  return {
    'kairos.v1': {
      format: 'Protocol Buffer 3 FileDescriptorProto',
      type: {},
      fileDescriptorProtos: fileDescriptorProtos(files),
    },
  };
}
