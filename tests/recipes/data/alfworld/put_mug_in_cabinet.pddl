;; An ALFWorld problem written by hand for agentspec's tests (not from ALFWorld's
;; data): a mug on a countertop, a closed cabinet, and the task of putting the
;; mug in the cabinet. It is played against ALFWorld's own domain (alfred.pddl)
;; and grammar (alfred.twl2), both shipped in the `alfworld` package; the test
;; puts the three together into a `.tw-pddl` game as `alfworld-generate` does.
;; Object names follow ALFWorld's mangling (`Name_bar_x_bar_y...`), which the
;; `AlfredDemangler` wrapper turns into "mug 1", "countertop 1", "cabinet 1".
;; The domain's constants (SinkBasinType, KnifeType, ...) are declared as in
;; ALFWorld's generated problems.
(define (problem put_mug_in_cabinet)
    (:domain alfred)
    (:objects
        agent1 - agent
        Mug_bar_1_bar_0_bar_1 - object
        MugType - otype
        KnifeType - otype
        ButterKnifeType - otype
        CounterTop_bar_1_bar_0_bar_0 - receptacle
        Cabinet_bar_2_bar_0_bar_0 - receptacle
        CounterTopType - rtype
        CabinetType - rtype
        SinkBasinType - rtype
        MicrowaveType - rtype
        FridgeType - rtype
        loc_bar_0_bar_0_bar_0_bar_0 - location
        loc_bar_1_bar_0_bar_0_bar_0 - location
        loc_bar_2_bar_0_bar_0_bar_0 - location
    )
    (:init
        (= (total-cost) 0)
        (atLocation agent1 loc_bar_0_bar_0_bar_0_bar_0)
        (receptacleType CounterTop_bar_1_bar_0_bar_0 CounterTopType)
        (receptacleType Cabinet_bar_2_bar_0_bar_0 CabinetType)
        (receptacleAtLocation CounterTop_bar_1_bar_0_bar_0 loc_bar_1_bar_0_bar_0_bar_0)
        (receptacleAtLocation Cabinet_bar_2_bar_0_bar_0 loc_bar_2_bar_0_bar_0_bar_0)
        (openable Cabinet_bar_2_bar_0_bar_0)
        (objectType Mug_bar_1_bar_0_bar_1 MugType)
        (pickupable Mug_bar_1_bar_0_bar_1)
        (inReceptacle Mug_bar_1_bar_0_bar_1 CounterTop_bar_1_bar_0_bar_0)
        (objectAtLocation Mug_bar_1_bar_0_bar_1 loc_bar_1_bar_0_bar_0_bar_0)
        (canContain CounterTopType MugType)
        (canContain CabinetType MugType)
    )
    (:goal
        (exists (?r - receptacle)
            (and
                (receptacleType ?r CabinetType)
                (exists (?o - object)
                    (and
                        (objectType ?o MugType)
                        (inReceptacle ?o ?r)
                    )
                )
            )
        )
    )
)
