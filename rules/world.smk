# The synthetic world of the tiny preset: every dataset in its real source's format.


localrules:
    world,


rule world:
    output:
        manifest=f"{RESULTS}/world/manifest.json",
    log:
        f"logs/world/world.log",
    conda:
        ENV
    params:
        world=lambda w: as_json(config["world"]),
        raw_root=config["raw_root"],
    shell:
        "make_world.py --world {params.world:q}"
        " --raw-root {params.raw_root} --manifest {output.manifest} 2> {log}"
