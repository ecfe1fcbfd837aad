/*
 * test_elf_link.c
 *		The linker of generated objects (elf_link.c): objects LLVM emits
 *		for the JIT's code model link and run (constant pools, jump tables,
 *		writable data, calls between objects and into the process), and
 *		damaged objects are refused with a status, never a crash.
 */
#include <math.h>
#include <stdint.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "silvan/elf_link.h"
#include "silvan/status.h"
#include "unit.h"

typedef double (*UnaryFn) (double);
typedef int32_t (*PickFn) (int32_t);
typedef int64_t (*BumpFn) (void);

/* A function's builder positioned at its entry block */
static LLVMBuilderRef
Begin(LLVMContextRef c, LLVMValueRef fn)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(c);

	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "entry"));
	return b;
}

/*
 * Object A: scale(x) = x * 1.2345678 + 0.5 (constants in a pool),
 * pick(k) (a switch LLVM makes a jump table), call_cos(x) = cos(x) (the
 * process's libm), twice_other(x) = 2 * other(x) (defined in object B)
 */
static LLVMModuleRef
BuildObjectA(LLVMContextRef c)
{
	LLVMModuleRef m = LLVMModuleCreateWithNameInContext("a", c);
	LLVMTypeRef d = LLVMDoubleTypeInContext(c);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
	LLVMTypeRef unary = LLVMFunctionType(d, &d, 1, false);
	LLVMValueRef fn,
				sw,
				other,
				cosine;
	LLVMBuilderRef b;

	fn = LLVMAddFunction(m, "scale", unary);
	b = Begin(c, fn);
	LLVMBuildRet(b, LLVMBuildFAdd(b, LLVMBuildFMul(b, LLVMGetParam(fn, 0), LLVMConstReal(d, 1.2345678), ""),
								  LLVMConstReal(d, 0.5), ""));
	LLVMDisposeBuilder(b);

	fn = LLVMAddFunction(m, "pick", LLVMFunctionType(i32, &i32, 1, false));
	b = Begin(c, fn);
	{
		LLVMBasicBlockRef fallback = LLVMAppendBasicBlockInContext(c, fn, "fallback");

		sw = LLVMBuildSwitch(b, LLVMGetParam(fn, 0), fallback, 8);
		for (int k = 0; k < 8; k++)
		{
			LLVMBasicBlockRef arm = LLVMAppendBasicBlockInContext(c, fn, "arm");
			LLVMBuilderRef ab = LLVMCreateBuilderInContext(c);
			LLVMValueRef callee_arg = LLVMGetParam(fn, 0);

			LLVMAddCase(sw, LLVMConstInt(i32, k, false), arm);
			LLVMPositionBuilderAtEnd(ab, arm);
			/* different work per arm, so LLVM keeps a table of jumps */
			LLVMBuildRet(ab, LLVMBuildAdd(ab, LLVMBuildMul(ab, callee_arg, LLVMConstInt(i32, 7 * k + 3, false), ""),
										  LLVMConstInt(i32, 1000 * k, false), ""));
			LLVMDisposeBuilder(ab);
		}
		LLVMPositionBuilderAtEnd(b, fallback);
		LLVMBuildRet(b, LLVMConstInt(i32, -1, true));
	}
	LLVMDisposeBuilder(b);

	cosine = LLVMAddFunction(m, "cos", unary);
	fn = LLVMAddFunction(m, "call_cos", unary);
	b = Begin(c, fn);
	LLVMBuildRet(b, LLVMBuildCall2(b, unary, cosine, (LLVMValueRef[]) {LLVMGetParam(fn, 0)}, 1, ""));
	LLVMDisposeBuilder(b);

	other = LLVMAddFunction(m, "other", unary);
	fn = LLVMAddFunction(m, "twice_other", unary);
	b = Begin(c, fn);
	LLVMBuildRet(b, LLVMBuildFMul(b, LLVMConstReal(d, 2.0),
								  LLVMBuildCall2(b, unary, other, (LLVMValueRef[]) {LLVMGetParam(fn, 0)}, 1, ""), ""));
	LLVMDisposeBuilder(b);
	return m;
}

/* Object B: other(x) = 3x, and bump(), which counts in a writable global */
static LLVMModuleRef
BuildObjectB(LLVMContextRef c)
{
	LLVMModuleRef m = LLVMModuleCreateWithNameInContext("b", c);
	LLVMTypeRef d = LLVMDoubleTypeInContext(c);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
	LLVMValueRef fn,
				counter,
				next;
	LLVMBuilderRef b;

	fn = LLVMAddFunction(m, "other", LLVMFunctionType(d, &d, 1, false));
	b = Begin(c, fn);
	LLVMBuildRet(b, LLVMBuildFMul(b, LLVMGetParam(fn, 0), LLVMConstReal(d, 3.0), ""));
	LLVMDisposeBuilder(b);

	counter = LLVMAddGlobal(m, i64, "counter");
	LLVMSetInitializer(counter, LLVMConstInt(i64, 41, false));
	LLVMSetLinkage(counter, LLVMInternalLinkage);
	fn = LLVMAddFunction(m, "bump", LLVMFunctionType(i64, NULL, 0, false));
	b = Begin(c, fn);
	next = LLVMBuildAdd(b, LLVMBuildLoad2(b, i64, counter, ""), LLVMConstInt(i64, 1, false), "");
	LLVMBuildStore(b, next, counter);
	LLVMBuildRet(b, next);
	LLVMDisposeBuilder(b);
	return m;
}

/* Emit a module as the JIT does (host CPU, JIT code model); malloc'd bytes */
static ElfObject
Emit(LLVMModuleRef m, LLVMCodeGenOptLevel level)
{
	char	   *triple = LLVMGetDefaultTargetTriple();
	char	   *cpu = LLVMGetHostCPUName();
	char	   *features = LLVMGetHostCPUFeatures();
	char	   *message = NULL;
	LLVMTargetRef target;
	LLVMTargetMachineRef tm;
	LLVMMemoryBufferRef buffer = NULL;
	ElfObject	object = {NULL, 0};

	if (LLVMGetTargetFromTriple(triple, &target, &message) == 0)
	{
		tm = LLVMCreateTargetMachine(target, triple, cpu, features, level, LLVMRelocDefault,
									 LLVMCodeModelJITDefault);
		LLVMSetTarget(m, triple);
		if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &message, &buffer) == 0)
		{
			void	   *bytes = malloc(LLVMGetBufferSize(buffer));

			memcpy(bytes, LLVMGetBufferStart(buffer), LLVMGetBufferSize(buffer));
			object.bytes = bytes;
			object.len = LLVMGetBufferSize(buffer);
			LLVMDisposeMemoryBuffer(buffer);
		}
		LLVMDisposeTargetMachine(tm);
	}
	LLVMDisposeMessage(message);
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(features);
	return object;
}

/* Link, expecting a refusal whose detail contains needle */
static bool
Refused(const ElfObject *objects, int count, const char *needle)
{
	SilvanStatus status;
	ElfImage   *image;

	StatusClear(&status);
	image = ElfLink(objects, count, &status);
	if (image != NULL)
	{
		ElfFree(image);
		fprintf(stderr, "linked, expected: %s\n", needle);
		return false;
	}
	if (strstr(status.detail, needle) == NULL)
		fprintf(stderr, "refused with \"%s\", expected: %s\n", status.detail, needle);
	return status.kind == SILVAN_ERROR_INVALID && strstr(status.message, "could not link") != NULL &&
		strstr(status.detail, needle) != NULL;
}

/* Offset of the first section of type in an object's section table; 0 if none */
static size_t
FindSection(const ElfObject *object, uint32_t type, uint64_t *size)
{
	const uint8_t *bytes = object->bytes;
	uint64_t	shoff;
	uint16_t	shnum;

	memcpy(&shoff, bytes + 0x28, 8);
	memcpy(&shnum, bytes + 0x3c, 2);
	for (int s = 0; s < shnum; s++)
	{
		const uint8_t *h = bytes + shoff + 64 * s;
		uint32_t	t;
		uint64_t	offset;

		memcpy(&t, h + 4, 4);
		if (t != type)
			continue;
		memcpy(&offset, h + 24, 8);
		memcpy(size, h + 32, 8);
		return offset;
	}
	return 0;
}

/* A copy of an object to damage */
static ElfObject
Copy(const ElfObject *object)
{
	void	   *bytes = malloc(object->len);

	memcpy(bytes, object->bytes, object->len);
	return (ElfObject) {bytes, object->len};
}

/* The two objects link, every function computes what its IR says */
static void
TestLinkAndRun(const ElfObject *objects, const char *level)
{
	SilvanStatus status;
	ElfImage   *image;

	StatusClear(&status);
	image = ElfLink(objects, 2, &status);
	CHECK_MSG(image != NULL, "%s: %s: %s", level, status.message, status.detail);
	if (image == NULL)
		return;
	CHECK(((UnaryFn) ElfLookup(image, "scale"))(2.0) == 2.0 * 1.2345678 + 0.5);
	for (int k = -1; k < 9; k++)
		CHECK(((PickFn) ElfLookup(image, "pick"))(k) == (k >= 0 && k < 8 ? k * (7 * k + 3) + 1000 * k : -1));
	CHECK(((UnaryFn) ElfLookup(image, "call_cos"))(0.25) == cos(0.25));
	CHECK(((UnaryFn) ElfLookup(image, "twice_other"))(1.5) == 9.0);
	CHECK(((BumpFn) ElfLookup(image, "bump"))() == 42);
	CHECK(((BumpFn) ElfLookup(image, "bump"))() == 43);
	CHECK(ElfLookup(image, "counter") == NULL);	/* internal: not visible */
	CHECK(ElfLookup(image, "no_such_symbol") == NULL);
	CHECK(ElfImageSize(image) > 0);
	ElfFree(image);
}

/* Damaged and mismatched objects are refused, naming what is wrong */
static void
TestRefusals(const ElfObject *objects)
{
	ElfObject	bad[2];
	uint64_t	size = 0;
	size_t		at;
	uint64_t	value;

	bad[0] = (ElfObject) {objects[0].bytes, 10};
	CHECK(Refused(bad, 1, "the object is 10 bytes"));

	bad[0] = Copy(&objects[0]);
	((uint8_t *) bad[0].bytes)[0x12] = 0xb7;	/* e_machine: aarch64 */
	CHECK(Refused(bad, 1, "is not x86-64"));
	free((void *) bad[0].bytes);

	bad[0] = Copy(&objects[0]);
	value = UINT64_C(1) << 40;
	memcpy((uint8_t *) bad[0].bytes + 0x28, &value, 8);	/* e_shoff */
	CHECK(Refused(bad, 1, "the section table"));
	free((void *) bad[0].bytes);

	/* A alone: other is nowhere */
	CHECK(Refused(objects, 1, "symbol other is not defined"));

	/* B twice: other and bump defined twice */
	bad[0] = objects[1];
	bad[1] = objects[1];
	CHECK(Refused(bad, 2, "is defined twice"));

	/* a relocation that patches past its section, one that names no symbol */
	bad[0] = Copy(&objects[0]);
	bad[1] = objects[1];
	at = FindSection(&bad[0], 4 /* SHT_RELA */ , &size);
	CHECK(at != 0 && size >= 24);
	value = UINT64_C(1) << 32;
	memcpy((uint8_t *) bad[0].bytes + at, &value, 8);	/* r_offset */
	CHECK(Refused(bad, 2, "patches outside its section"));
	free((void *) bad[0].bytes);

	bad[0] = Copy(&objects[0]);
	value = (UINT64_C(100000) << 32) | 1;	/* r_info: symbol 100000, R_X86_64_64 */
	memcpy((uint8_t *) bad[0].bytes + at + 8, &value, 8);
	CHECK(Refused(bad, 2, "symbol 100000 does not exist"));
	free((void *) bad[0].bytes);

	bad[0] = Copy(&objects[0]);
	value = 37;					/* R_X86_64_GOTPC32_TLSDESC: not supported */
	memcpy((uint8_t *) bad[0].bytes + at + 8, &value, 8);
	CHECK(Refused(bad, 2, "of type 37 is not supported"));
	free((void *) bad[0].bytes);
}

/*
 * Random damage: every outcome is a linked image or a refusal, never a
 * crash or a read outside the bytes (run under valgrind by make unittest's
 * memory checks, and ASan by the fuzz build)
 */
static void
TestRandomDamage(const ElfObject *objects)
{
	uint64_t	seed = 12345;
	int			linked = 0;
	int			refused = 0;

	for (int round = 0; round < 20000; round++)
	{
		ElfObject	bad[2] = {Copy(&objects[0]), objects[1]};
		SilvanStatus status;
		ElfImage   *image;
		int			flips = 1 + round % 4;

		for (int f = 0; f < flips; f++)
		{
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			((uint8_t *) bad[0].bytes)[(seed >> 33) % bad[0].len] ^= (uint8_t) (1u << ((seed >> 20) % 8));
		}
		StatusClear(&status);
		if ((image = ElfLink(bad, 2, &status)) != NULL)
		{
			linked++;
			ElfFree(image);
		}
		else
			refused++;
		free((void *) bad[0].bytes);
	}
	printf("random damage: %d linked, %d refused\n", linked, refused);
	CHECK(linked + refused == 20000 && refused > 0);
}

int
main(void)
{
	LLVMContextRef c;
	ElfObject	objects[2];

	CHECK(ElfLinkSupported());
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
	for (int pass = 0; pass < 2; pass++)
	{
		LLVMCodeGenOptLevel level = pass == 0 ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelNone;

		LLVMModuleRef a,
					b;

		c = LLVMContextCreate();
		a = BuildObjectA(c);
		b = BuildObjectB(c);
		objects[0] = Emit(a, level);
		objects[1] = Emit(b, level);
		LLVMDisposeModule(a);
		LLVMDisposeModule(b);
		CHECK(objects[0].bytes != NULL && objects[1].bytes != NULL);
		if (objects[0].bytes != NULL && objects[1].bytes != NULL)
		{
			TestLinkAndRun(objects, pass == 0 ? "O2" : "O0");
			if (pass == 0)
			{
				TestRefusals(objects);
				TestRandomDamage(objects);
			}
		}
		free((void *) objects[0].bytes);
		free((void *) objects[1].bytes);
		LLVMContextDispose(c);
	}
	UNIT_DONE();
}
