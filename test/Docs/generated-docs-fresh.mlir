// The dialect docs checked into docs/Dialects must match what the ODS
// definitions generate. On failure run `ninja -C build tang-doc` and commit.
// RUN: diff -u %tang_src/docs/Dialects/TangDialect.md %tang_obj/docs/Tang/TangDialect.md
// RUN: diff -u %tang_src/docs/Dialects/TangAttributes.md %tang_obj/docs/Tang/TangAttributes.md
// RUN: diff -u %tang_src/docs/Dialects/TangPasses.md %tang_obj/docs/Tang/TangPasses.md
// RUN: diff -u %tang_src/docs/Dialects/TangConversionPasses.md %tang_obj/docs/Tang/TangConversionPasses.md
// RUN: diff -u %tang_src/docs/Dialects/TangTargetPasses.md %tang_obj/docs/Tang/TangTargetPasses.md
